# mutant: straggler_max
# exercise: metrics
# replaces: fttrainer/metrics.py
# why: read-the-release pass: the slowest rank by its largest single step (max local time), not its mean: one
#      spike on a rank that is faster on average names the wrong straggler
@@
-            local_s=("local_s", "mean"),
+            local_s=("local_s", "max"),
