# mutant: scaling_lr_unclamped
# exercise: scaling
# replaces: scaling_solution
# why: the warm-up ramp is not clamped at 1: after warm-up ends the LR keeps growing past the target
@@
-    ramp = 1.0 if warmup <= 0 else min(1.0, step / warmup)
+    ramp = 1.0 if warmup <= 0 else step / warmup
