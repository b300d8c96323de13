# mutant: measure_cost_no_threads
# exercise: measure
# replaces: measure_solution
# why: counts one core per rank: core_s_per_1k ignores threads_per_rank
@@
-    out["core_s_per_1k"] = 1000 * threads_per_rank * out["step_s"] / out["batch_per_rank"]
+    out["core_s_per_1k"] = 1000 * out["step_s"] / out["batch_per_rank"]
