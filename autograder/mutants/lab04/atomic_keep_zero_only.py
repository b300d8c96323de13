# mutant: atomic_keep_zero_only
# exercise: atomic
# replaces: atomic_solution
# why: "keep < 1" read as "keep == 0": a negative keep is accepted (written from the release text alone)
@@
-    if keep < 1:
+    if keep == 0:
