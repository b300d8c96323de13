# mutant: scaling_wrong_baseline
# exercise: scaling
# replaces: scaling_solution
# why: efficiency against the first world-1 row of the table whatever its mode (strong vs weak baselines mixed)
@@
-    base = out[out["world"] == 1].set_index("mode")["samples_per_s"]
-    out["efficiency"] = out["samples_per_s"] / (out["world"] * out["mode"].map(base))
+    base = float(out[out["world"] == 1]["samples_per_s"].iloc[0])
+    out["efficiency"] = out["samples_per_s"] / (out["world"] * base)
