# mutant: stragglers_weight_no_world
# exercise: stragglers
# replaces: stragglers_solution
# why: weights b_r / B without the world factor: DDP's division by R shrinks the gradient R-fold
@@
-    return world * b_r / global_batch  # mean_r * b_r / B summed over ranks = global mean; DDP divides by R
+    return b_r / global_batch
