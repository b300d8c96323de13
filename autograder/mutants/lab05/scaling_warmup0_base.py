# mutant: scaling_warmup0_base
# exercise: scaling
# replaces: scaling_solution
# why: warmup = 0 guarded by max(warmup, 1): at step 0 with no warm-up the LR is base_lr, not the target at
#   once (the boundary of the warm-up rule)
@@
-    ramp = 1.0 if warmup <= 0 else min(1.0, step / warmup)
+    ramp = min(1.0, step / max(warmup, 1))
