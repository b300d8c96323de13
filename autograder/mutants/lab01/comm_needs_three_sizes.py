# mutant: comm_needs_three_sizes
# exercise: comm
# replaces: comm_solution
# why: refuses a fit through exactly 2 distinct sizes
@@
-    if len(set(sizes)) < 2:
+    if len(set(sizes)) < 3:
