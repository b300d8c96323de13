# mutant: measure_params_float
# exercise: measure
# replaces: measure_solution
# why: type: returns the floor division of a float budget (1000000.0), a float where the text asks for the
#   integer count of parameters
@@
-    return int(budget_bytes // per_param)
+    return budget_bytes // per_param
