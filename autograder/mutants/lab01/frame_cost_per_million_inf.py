# mutant: frame_cost_per_million_inf
# exercise: frame
# replaces: frame_solution
# why: a target never reached makes the price per sample infinite too
@@
-            "cost_per_million_samples": 1e6 / samples_per_s * per_second}
+            "cost_per_million_samples": math.inf if steps_to_target is None else 1e6 / samples_per_s * per_second}
