# mutant: memory_ignores_microbatches
# exercise: memory
# replaces: memory_solution
# why: activations of one micro-batch whatever the schedule holds in flight
@@
-    in_flight = 1 if pp == 1 else (micro_batches if schedule == "gpipe" else min(micro_batches, pp))
+    in_flight = 1
