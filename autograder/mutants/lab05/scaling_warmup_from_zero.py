# mutant: scaling_warmup_from_zero
# exercise: scaling
# replaces: scaling_solution
# why: the warm-up ramps from 0 to the target instead of from base_lr (the usual "lr x step / warmup"):
#   right once warm-up ends, wrong at step 0 and half-way
@@
-    return base_lr + (target - base_lr) * ramp
+    return target * ramp
