# mutant: measure_failed_run_zero
# exercise: measure
# replaces: measure_solution
# why: a failed run (step_s NaN) gets throughput 0 instead of keeping NaN
@@
-    out["samples_per_s"] = out["world"] * out["batch_per_rank"] / out["step_s"]
+    out["samples_per_s"] = (out["world"] * out["batch_per_rank"] / out["step_s"]).fillna(0.0)
