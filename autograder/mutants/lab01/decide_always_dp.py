# mutant: decide_always_dp
# exercise: decide
# replaces: decide_solution
# why: always takes the widest feasible data-parallel configuration
@@
-    near = ok[ok["step_s"] <= ok["step_s"].min() * (1 + tolerance)]  # splitting further buys < tolerance
-    return near.sort_values(["ranks", "step_s"], kind="stable").iloc[0].to_dict()
+    return ok.sort_values(["dp", "step_s"], ascending=[False, True], kind="stable").iloc[0].to_dict()
