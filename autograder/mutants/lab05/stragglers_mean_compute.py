# mutant: stragglers_mean_compute
# exercise: stragglers
# replaces: stragglers_solution
# why: the mean compute per step: one GC pause on a fast rank names it the straggler
@@
-    compute = spans[spans["kind"] == "compute"].groupby("rank")["seconds"].median()
+    compute = spans[spans["kind"] == "compute"].groupby("rank")["seconds"].mean()
