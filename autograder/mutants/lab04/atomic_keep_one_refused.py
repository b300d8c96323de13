# mutant: atomic_keep_one_refused
# exercise: atomic
# replaces: atomic_solution
# why: boundary of a ">= 1" rule: refuses keep=1, the smallest legal value (only keep < 1 is refused)
@@
-    if keep < 1:
+    if keep <= 1:
