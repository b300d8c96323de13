# mutant: stragglers_round_shares
# exercise: stragglers
# replaces: stragglers_solution
# why: rounds each ideal share independently: the sizes need not sum to the global batch
@@
-    sizes = [math.floor(x) for x in share]
-    by_remainder = sorted(range(len(share)), key=lambda r: (-(share[r] - sizes[r]), r))
-    for r in by_remainder[: global_batch - sum(sizes)]:
-        sizes[r] += 1
+    sizes = [round(x) for x in share]
