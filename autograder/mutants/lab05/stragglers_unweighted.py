# mutant: stragglers_unweighted
# exercise: stragglers
# replaces: stragglers_solution
# why: rebalanced ranks average their mean losses without weights: small shards count as much as big ones
@@
-    return world * b_r / global_batch  # mean_r * b_r / B summed over ranks = global mean; DDP divides by R
+    return 1.0
