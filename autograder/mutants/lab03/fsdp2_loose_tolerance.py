# mutant: fsdp2_loose_tolerance
# exercise: fsdp2
# replaces: fsdp2_solution
# why: accepts ratios within 1e-2 of 1, not 1e-3: gradients 0.2 % off pass (a boundary of the rule)
@@
-    if abs(ratio - 1) > 1e-3:
+    if abs(ratio - 1) > 1e-2:
