# mutant: memory_accepts_zero_microbatches
# exercise: memory
# replaces: memory_solution
# why: checks the degrees but not micro_batches
@@
-    for name, v in (("world", world), ("tp", tp), ("pp", pp), ("micro_batches", micro_batches)):
+    for name, v in (("world", world), ("tp", tp), ("pp", pp)):
