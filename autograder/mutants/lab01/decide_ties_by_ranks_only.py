# mutant: decide_ties_by_ranks_only
# exercise: decide
# replaces: decide_solution
# why: breaks a tie on ranks by row order, not by the smaller step_s
@@
-    return near.sort_values(["ranks", "step_s"], kind="stable").iloc[0].to_dict()
+    return near.sort_values(["ranks"], kind="stable").iloc[0].to_dict()
