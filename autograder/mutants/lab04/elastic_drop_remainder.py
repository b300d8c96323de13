# mutant: elastic_drop_remainder
# exercise: elastic
# replaces: elastic_solution
# why: trims each global batch to a multiple of the world size (drop_last): samples lost
@@
-    return [rest[i : i + batch_size][rank::world_size] for i in range(0, len(rest), batch_size)]
+    batches = [rest[i : i + batch_size] for i in range(0, len(rest), batch_size)]
+    return [b[: len(b) // world_size * world_size][rank::world_size] for b in batches]
