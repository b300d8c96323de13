# mutant: fsdp2_summed_absolute
# exercise: fsdp2
# replaces: fsdp2_solution
# why: reads "within 1 %" of the world size as within 0.01 (absolute): a ratio of 2.015 at world 2 is not
#      named summed (written from the release text alone)
@@
-        why = f" - summed over {world} ranks, not averaged?" if abs(ratio - world) < 1e-2 * world else ""
+        why = f" - summed over {world} ranks, not averaged?" if abs(ratio - world) < 1e-2 else ""
