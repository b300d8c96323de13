# mutant: frame_zero_steps_is_none
# exercise: frame
# replaces: frame_solution
# why: tests the target with truthiness, so a target reached at step 0 counts as never reached
@@
-    time_to_target = math.inf if steps_to_target is None else steps_to_target * step_s
+    time_to_target = steps_to_target * step_s if steps_to_target else math.inf
