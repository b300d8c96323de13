# mutant: elastic_per_rank_stream
# exercise: elastic
# replaces: elastic_solution
# why: deals the whole remaining epoch per rank, not each global batch: batches change with world
@@
-    return [rest[i : i + batch_size][rank::world_size] for i in range(0, len(rest), batch_size)]
+    mine = rest[rank::world_size]
+    per = math.ceil(batch_size / world_size)
+    steps = math.ceil(len(rest) / batch_size)
+    return [mine[j * per : (j + 1) * per] for j in range(steps)]
