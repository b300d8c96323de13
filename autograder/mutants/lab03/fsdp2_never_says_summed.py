# mutant: fsdp2_never_says_summed
# exercise: fsdp2
# replaces: fsdp2_solution
# why: check_averaged with a tolerance of 1.5 instead of 1e-3: a 2x (summed) gradient slips through
@@
-    if abs(ratio - 1) > 1e-3:
+    if abs(ratio - 1) > 1.5:
