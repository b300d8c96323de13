# mutant: sampler_contiguous
# exercise: sampler
# replaces: sampler_solution
# why: deals contiguous blocks instead of interleaving
@@
-        # repeat the head, wrapping again when the pad is longer than the data (n < world); n = 0: nothing
+        # repeat the head, wrapping again when the pad is longer than the data (n < world)
@@
-    return indices[rank:total:world_size]  # interleaved: rank r takes r, r+R, r+2R, ...
+    return indices[rank * num_samples:(rank + 1) * num_samples]  # interleaved: rank r takes r, r+R, r+2R, ...
