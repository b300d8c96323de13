# mutant: fsdp2_summed_is_two
# exercise: fsdp2
# replaces: fsdp2_solution
# why: says "summed" when the ratio is close to 2, whatever the world size (the world-2 case generalised
#      wrongly): 3x at world 3 is not named summed, 2x at world 3 is
@@
-        why = f" - summed over {world} ranks, not averaged?" if abs(ratio - world) < 1e-2 * world else ""
+        why = " - summed over 2 ranks, not averaged?" if abs(ratio - 2) < 2e-2 else ""
