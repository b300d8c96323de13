# mutant: stragglers_take_from_last
# exercise: stragglers
# replaces: stragglers_solution
# why: the sample for a rank left with 0 comes from the last of the tied largest ranks, not the lower one
@@
-            sizes[max(range(len(sizes)), key=lambda q: sizes[q])] -= 1
+            sizes[max(reversed(range(len(sizes))), key=lambda q: sizes[q])] -= 1
