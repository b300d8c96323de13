# mutant: decide_absolute_tolerance
# exercise: decide
# replaces: decide_solution
# why: tolerance in seconds instead of relative to the fastest step
@@
-    near = ok[ok["step_s"] <= ok["step_s"].min() * (1 + tolerance)]  # splitting further buys < tolerance
+    near = ok[ok["step_s"] <= ok["step_s"].min() + tolerance]  # splitting further buys < tolerance
