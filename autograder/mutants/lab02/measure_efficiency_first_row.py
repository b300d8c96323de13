# mutant: measure_efficiency_first_row
# exercise: measure
# replaces: measure_solution
# why: first vs the right row: takes each impl's first row as the world-1 baseline, right only while the
#   table happens to list world 1 first
@@
-    base = out[out["world"] == 1].set_index("impl")["samples_per_s"]
+    base = out.groupby("impl")["samples_per_s"].first()
