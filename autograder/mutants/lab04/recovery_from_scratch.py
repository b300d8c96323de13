# mutant: recovery_from_scratch
# exercise: recovery
# replaces: recovery_solution
# why: relaunches but never loads the checkpoint: right answer, all work redone
@@
-    start = lab04.simple_load(root, tr) or 0  # None on the first attempt: start from scratch
+    start = 0
