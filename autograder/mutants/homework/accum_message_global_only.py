# mutant: accum_message_global_only
# exercise: ddp
# replaces: fttrainer/sampler.py
# why: the refusal names the global batch only, not micro_batch and world_size (the text asks for all three)
@@
-            f"global_batch={global_batch} is not divisible by micro_batch x world_size = {micro_batch} x "
-            f"{world_size} = {per_step}; choose a global batch that is a multiple of {per_step} or another "
-            f"micro_batch (the global batch never changes silently)"
+            f"global_batch={global_batch} cannot be split evenly over the ranks' micro-batches"
