# mutant: atomic_no_verify
# exercise: atomic
# replaces: atomic_solution
# why: the loader trusts any directory with a readable manifest, never checks sizes or checksums
@@
-    for name, meta in files.items():
-        if not (d / name).is_file():
-            return f"{name} is missing"
-        size = (d / name).stat().st_size
-        if size != meta["bytes"]:
-            return f"{name} has {size} bytes, the manifest says {meta['bytes']} (truncated)"
-        if deep and hashlib.sha256((d / name).read_bytes()).hexdigest() != meta["sha256"]:
-            return f"{name} fails its sha256 check (corrupted)"
+    del files, deep  # trusted as it is
