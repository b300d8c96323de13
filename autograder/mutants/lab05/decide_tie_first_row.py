# mutant: decide_tie_first_row
# exercise: decide
# replaces: decide_solution
# why: the first row of lowest cost (idxmin): on a cost tie the row order, not fewer ranks, decides
@@
-    return ok.sort_values(["cost", "world"], kind="stable").iloc[0].to_dict()
+    return ok.loc[ok["cost"].idxmin()].to_dict()
