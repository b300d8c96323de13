# mutant: lr_warmup_off_by_one
# exercise: ddp
# replaces: fttrainer/ddp.py
# why: the warm-up counts from 0 (step 0 at lr 0, step W-1 at lr (W-1)/W): linear and monotone, reaches lr
#      one step late
@@
-            return (step + 1) / warm
+            return step / warm
