# mutant: throughput_per_rank
# exercise: scaling
# replaces: fttrainer/scaling.py
# why: reports one rank's samples per second (its share of the global batch) as the job's throughput: table
#      is self-consistent (efficiency and cost follow from it) but world 2 looks half as fast as it is
@@
+_run_scaling_whole_job = run_scaling
+
+
+def run_scaling(out_dir, *args, **kwargs):
+    df = _run_scaling_whole_job(out_dir, *args, **kwargs)
+    df["samples_per_s"] = df["samples_per_s"] / df["world"]
+    base = float(df.loc[df["world"] == 1, "samples_per_s"].iloc[0])
+    df["efficiency"] = df["samples_per_s"] / (df["world"] * base)
+    df["cost_per_sample"] = df["world"] / df["samples_per_s"]
+    return df
+
+
 def _has_tabulate() -> bool:
