# mutant: lr_linear_decay
# exercise: ddp
# replaces: fttrainer/ddp.py
# why: decays linearly from lr to the 10 % floor instead of along a cosine (same ends, wrong middle)
@@
-        return 0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress))
+        return 1.0 - 0.9 * progress
