# mutant: decide_choose_series
# exercise: decide
# replaces: decide_solution
# why: returns the chosen row as a pandas Series, not the dict the text asks for (indexing by name works
#   the same, so only the type tells)
@@
-    return ok.sort_values(["cost", "world"], kind="stable").iloc[0].to_dict()
+    return ok.sort_values(["cost", "world"], kind="stable").iloc[0]
