# mutant: elastic_remainder_last
# exercise: elastic
# replaces: elastic_solution
# why: remainder rule: contiguous shares of len // world, the whole leftover to the last rank, so shares can
#   differ by more than one sample (batch 3 over 5 ranks: 0, 0, 0, 0, 3)
@@
-    return [rest[i : i + batch_size][rank::world_size] for i in range(0, len(rest), batch_size)]
+    out = []
+    for i in range(0, len(rest), batch_size):
+        g = rest[i : i + batch_size]
+        k = len(g) // world_size
+        out.append(g[rank * k : (rank + 1) * k] if rank < world_size - 1 else g[rank * k :])
+    return out
