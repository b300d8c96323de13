# mutant: comm_algbw
# exercise: comm
# replaces: comm_solution
# why: fits beta on algorithm bytes S instead of bus bytes bus_factor * S
@@
-    x = factor * np.asarray(sizes, dtype=np.float64)  # bus bytes: what each rank actually sends
+    x = np.asarray(sizes, dtype=np.float64)
