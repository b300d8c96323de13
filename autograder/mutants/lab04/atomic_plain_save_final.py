# mutant: atomic_plain_save_final
# exercise: atomic
# replaces: atomic_solution
# why: writes straight into the final step directory (no temp dir): a crash leaves a half step-N
@@
-    final, tmp = root / f"step-{step:08d}", root / f".tmp-step-{step:08d}"
+    final = tmp = root / f"step-{step:08d}"
@@
-    if final.exists():
-        lab04.retire(final)  # out of the step- namespace first: a crash mid-delete leaves only debris
-    os.replace(tmp, final)  # atomic: readers see no directory or the whole one
