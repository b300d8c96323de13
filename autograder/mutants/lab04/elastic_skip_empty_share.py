# mutant: elastic_skip_empty_share
# exercise: elastic
# replaces: elastic_solution
# why: degenerate legal shape: drops a rank's empty shares (world larger than the batch, the last short batch),
#   so ranks return different numbers of batches and the all-reduce of a step has a rank missing
@@
-    return [rest[i : i + batch_size][rank::world_size] for i in range(0, len(rest), batch_size)]
+    shares = [rest[i : i + batch_size][rank::world_size] for i in range(0, len(rest), batch_size)]
+    return [s for s in shares if s]
