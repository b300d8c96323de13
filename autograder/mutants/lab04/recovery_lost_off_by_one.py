# mutant: recovery_lost_off_by_one
# exercise: recovery
# replaces: recovery_solution
# why: lost work counted from the new attempt's first step, not the step it resumed from (one step short)
@@
-        lost.append(int(failed["step"].max()) - (int(nxt["step"].min()) - 1) if len(failed) else 0)
+        lost.append(int(failed["step"].max()) - int(nxt["step"].min()) if len(failed) else 0)
