# mutant: stragglers_remainder_to_fastest
# exercise: stragglers
# replaces: stragglers_solution
# why: the samples left after flooring go to the fastest ranks, not to the largest fractional remainders (the
#   same whenever the fastest ranks also have the largest remainders)
@@
-    by_remainder = sorted(range(len(share)), key=lambda r: (-(share[r] - sizes[r]), r))
+    by_remainder = sorted(range(len(share)), key=lambda r: (sec_per_sample[r], r))
