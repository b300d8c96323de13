# mutant: stragglers_take_from_fastest
# exercise: stragglers
# replaces: stragglers_solution
# why: a rank left with 0 takes its sample from the fastest rank, not from the rank holding the most (the same
#   unless a slower rank ended up with as many samples through its remainder)
@@
-            sizes[max(range(len(sizes)), key=lambda q: sizes[q])] -= 1
+            sizes[min(range(len(sizes)), key=lambda q: sec_per_sample[q])] -= 1
