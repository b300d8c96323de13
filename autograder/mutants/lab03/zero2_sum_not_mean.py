# mutant: zero2_sum_not_mean
# exercise: zero2
# replaces: zero2_solution
# why: reduce-scatter sums the gradients but never divides by the world size
@@
-    return out.div_(world)
+    return out
