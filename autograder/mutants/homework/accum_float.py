# mutant: accum_float
# exercise: ddp
# replaces: fttrainer/sampler.py
# why: true division: grad_accum_steps(64, 16, 2) is 2.0, equal to 2 but a float (a count must be an int)
@@
-    return global_batch // per_step
+    return global_batch / per_step
