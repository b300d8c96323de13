# mutant: comm_fit_median_per_size
# exercise: comm
# replaces: comm_solution
# why: summarises repeated timings of a size by their median, then fits the medians: the same line when each
#      size is timed once, not the least-squares line of repeated timings with an outlier
@@
-    slope, intercept = np.polyfit(x, np.asarray(times, dtype=np.float64), 1)
+    med = pd.Series(list(times), dtype="float64").groupby(list(x)).median()  # one robust time per size
+    slope, intercept = np.polyfit(med.index.to_numpy(dtype=np.float64), med.to_numpy(), 1)
