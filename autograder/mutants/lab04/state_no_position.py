# mutant: state_no_position
# exercise: state
# replaces: state_solution
# why: restores the step count but not epoch/consumed: the data stream restarts the epoch
@@
-    tr.step, tr.epoch, tr.consumed = pos["step"], pos["epoch"], pos["consumed"]
+    tr.step = pos["step"]
