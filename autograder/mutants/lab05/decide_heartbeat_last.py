# mutant: decide_heartbeat_last
# exercise: decide
# replaces: decide_solution
# why: the heartbeat from the last measured step, not the largest: a tail step mid-run is missed
@@
-    return margin * max(step_s)
+    return margin * step_s[-1]
