# mutant: comm_alpha_zero
# exercise: comm
# replaces: comm_solution
# why: forces alpha to 0: a least-squares line through the origin
@@
-    slope, intercept = np.polyfit(x, np.asarray(times, dtype=np.float64), 1)
-    return float(intercept / steps), float(slope)
+    t = np.asarray(times, dtype=np.float64)
+    return 0.0, float((x * t).sum() / (x * x).sum())
