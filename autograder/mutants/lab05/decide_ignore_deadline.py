# mutant: decide_ignore_deadline
# exercise: decide
# replaces: decide_solution
# why: the cheapest configuration overall, ignoring the deadline
@@
-    ok = cands[cands["time_s"] <= deadline_s]
-    if ok.empty:
+    ok = cands
+    if (cands["time_s"] > deadline_s).all():
