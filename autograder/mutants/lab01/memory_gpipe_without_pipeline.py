# mutant: memory_gpipe_without_pipeline
# exercise: memory
# replaces: memory_solution
# why: GPipe holds every micro-batch even without a pipeline (pp = 1 runs them one after another)
@@
-    in_flight = 1 if pp == 1 else (micro_batches if schedule == "gpipe" else min(micro_batches, pp))
+    in_flight = micro_batches if schedule == "gpipe" else (1 if pp == 1 else min(micro_batches, pp))
