# mutant: memory_zero1_undivided
# exercise: memory
# replaces: memory_solution
# why: ZeRO-1 keeps the whole optimizer state on every rank (the stage threshold is off by one)
@@
-    optimizer = local * optim_bytes / (dp if zero >= 1 else 1)
+    optimizer = local * optim_bytes / (dp if zero >= 2 else 1)
