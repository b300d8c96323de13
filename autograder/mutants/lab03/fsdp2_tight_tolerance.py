# mutant: fsdp2_tight_tolerance
# exercise: fsdp2
# replaces: fsdp2_solution
# why: accepts ratios within 1e-4 of 1, not 1e-3: averaged gradients 0.05 % off (inside the rule) are refused
@@
-    if abs(ratio - 1) > 1e-3:
+    if abs(ratio - 1) > 1e-4:
