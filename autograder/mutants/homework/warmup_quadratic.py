# mutant: warmup_quadratic
# exercise: ddp
# replaces: fttrainer/ddp.py
# why: the warm-up rises to lr but quadratically, not linearly (rises, monotone decay, 10 % end all hold)
@@
-            return (step + 1) / warm
+            return ((step + 1) / warm) ** 2
