# mutant: comm_fit_mean_per_size
# exercise: comm
# replaces: comm_solution
# why: written from the release text alone (issue 34; then caught only by the measured fit): averages the
#      repeated timings of each size first, then fits one line through the means: the least-squares line when
#      every size is timed equally often, not when one size is timed more often (the measurement times its
#      smallest size twice)
@@
-    slope, intercept = np.polyfit(x, np.asarray(times, dtype=np.float64), 1)
+    mean = pd.Series(list(times), dtype="float64").groupby(list(x)).mean()  # one time per size
+    slope, intercept = np.polyfit(mean.index.to_numpy(dtype=np.float64), mean.to_numpy(), 1)
