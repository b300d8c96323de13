# mutant: sampler_no_epoch
# exercise: sampler
# replaces: sampler_solution
# why: seeds the shuffle with seed only: every epoch repeats
@@
-        g.manual_seed(seed + epoch)
+        g.manual_seed(seed)
@@
-        # repeat the head, wrapping again when the pad is longer than the data (n < world); n = 0: nothing
+        # repeat the head, wrapping again when the pad is longer than the data (n < world)
