# mutant: accum_ignores_world
# exercise: ddp
# replaces: fttrainer/sampler.py
# why: accum = global / micro, forgetting the ranks (right at world 1 only): grad_accum_steps(64, 16, 2) is 4
@@
-    return global_batch // per_step
+    return global_batch // micro_batch
