# mutant: decide_timeout_step_tail
# exercise: decide
# replaces: decide_solution
# why: the old rule, the collective timeout from the step tail alone: shorter than one checkpoint save, so a healthy job is killed at its first checkpoint barrier
@@
-    return margin * max(max(waits) for waits in phase_s.values())
+    return margin * max(phase_s["step"])
