# mutant: waited_all_ranks
# exercise: metrics
# replaces: fttrainer/metrics.py
# why: waited_s sums every rank's wait, the slowest rank's own included (the text: the *other* ranks)
@@
-    waited = float(per_rank.loc[per_rank["rank"] != slowest, "wait_s"].sum())
+    waited = float(per_rank["wait_s"].sum())
