# mutant: memory_negative_zero_accepted
# exercise: memory
# replaces: memory_solution
# why: refuses a ZeRO stage above 3 but not one below 0 (zero = -1 runs as plain data parallelism)
@@
-    if zero not in (0, 1, 2, 3):
+    if zero > 3:
