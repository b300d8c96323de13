# mutant: comm_step_compute_split
# exercise: comm
# replaces: comm_solution
# why: divides compute_s by the world size although it is already one rank's compute: right at world 1 and
#      for the break-even batch (compute 0), wrong for every world > 1
@@
-    return float(compute_s + 2 * (world - 1) * alpha + 2 * (world - 1) / world * grad_bytes * beta)
+    return float(compute_s / world + 2 * (world - 1) * alpha + 2 * (world - 1) / world * grad_bytes * beta)
