# mutant: sampler_drop_even
# exercise: sampler
# replaces: sampler_solution
# why: degenerate legal shape: with drop_last it always drops one round, even when N is a multiple of the
#   world size and there is nothing to drop (the empty remainder)
@@
-    if drop_last and n % world_size != 0:
+    if drop_last:
