# mutant: atomic_no_verify
# exercise: atomic
# replaces: atomic_solution
# why: the loader trusts any directory with a manifest, never checks sizes or checksums (lab04.verify_dir)
@@
-        if (why := lab04.verify_dir(d)) is not None:
+        if (why := None if (d / MANIFEST).is_file() else "no manifest") is not None:
