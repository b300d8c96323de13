# mutant: interval_no_factor_two
# exercise: interval
# replaces: interval_solution
# why: Young/Daly without the factor 2: sqrt(C * MTBF)
@@
-    return math.sqrt(2.0 * cost_s * mtbf_s)
+    return math.sqrt(cost_s * mtbf_s)
