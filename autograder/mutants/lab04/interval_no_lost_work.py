# mutant: interval_no_lost_work
# exercise: interval
# replaces: interval_solution
# why: overhead counts saves and restarts but not the half interval of work lost per failure
@@
-    return cost_s / interval_s + (interval_s / 2.0 + restart_s) / mtbf_s
+    return cost_s / interval_s + restart_s / mtbf_s
