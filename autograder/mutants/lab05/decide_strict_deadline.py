# mutant: decide_strict_deadline
# exercise: decide
# replaces: decide_solution
# why: time_s < deadline: a configuration finishing exactly at the deadline is wrongly out of time
@@
-    ok = cands[cands["time_s"] <= deadline_s]
+    ok = cands[cands["time_s"] < deadline_s]
