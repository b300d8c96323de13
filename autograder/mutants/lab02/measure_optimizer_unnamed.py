# mutant: measure_optimizer_unnamed
# exercise: measure
# replaces: measure_solution
# why: refuses an unknown optimizer without saying which one
@@
-        raise ValueError(f"optimizer must be one of {sorted(state)}, got {optimizer!r}")
+        raise ValueError(f"optimizer must be one of {sorted(state)}")
