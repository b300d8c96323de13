# mutant: stragglers_total_time
# exercise: stragglers
# replaces: stragglers_solution
# why: names the straggler by total step time, which the all-reduce makes equal on every rank
@@
-    compute = spans[spans["kind"] == "compute"].groupby("rank")["seconds"].median()
-    return int(compute.idxmax())
+    total = spans.groupby(["rank", "step"])["seconds"].sum().groupby("rank").median()
+    return int(total.idxmax())
