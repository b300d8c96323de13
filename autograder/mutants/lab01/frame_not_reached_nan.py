# mutant: frame_not_reached_nan
# exercise: frame
# replaces: frame_solution
# why: a target never reached is marked missing (NaN) instead of math.inf: sorts and compares as no number
@@
-    time_to_target = math.inf if steps_to_target is None else steps_to_target * step_s
+    time_to_target = math.nan if steps_to_target is None else steps_to_target * step_s
