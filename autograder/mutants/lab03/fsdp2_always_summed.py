# mutant: fsdp2_always_summed
# exercise: fsdp2
# replaces: fsdp2_solution
# why: says "summed" on every failure, also when the ratio is nowhere near the world size
@@
-        why = f" - summed over {world} ranks, not averaged?" if abs(ratio - world) < 1e-2 * world else ""
+        why = f" - summed over {world} ranks, not averaged?"
