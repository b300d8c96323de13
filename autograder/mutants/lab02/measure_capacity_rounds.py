# mutant: measure_capacity_rounds
# exercise: measure
# replaces: measure_solution
# why: read-the-release pass: rounds the parameter count to the nearest integer instead of flooring it: a
#      fraction >= 0.5 rounds up to a count that no longer fits the budget
@@
-    return int(budget_bytes // per_param)
+    return round(budget_bytes / per_param)
