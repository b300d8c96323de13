# mutant: lr_decay_to_zero
# exercise: ddp
# replaces: fttrainer/ddp.py
# why: the usual cosine to 0 (CosineAnnealingLR's default eta_min) instead of to the 10 % floor
@@
-        return 0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress))
+        return 0.5 * (1.0 + math.cos(math.pi * progress))
