# mutant: straggler_median
# exercise: metrics
# replaces: fttrainer/metrics.py
# why: the slowest rank by median local time, not mean: one long pause (a GC, a checkpoint) goes unseen
@@
-            local_s=("local_s", "mean"),
+            local_s=("local_s", "median"),
