# mutant: memory_1f1b_holds_pp
# exercise: memory
# replaces: memory_solution
# why: 1F1B holds pp micro-batches even when fewer than pp exist
@@
-    in_flight = 1 if pp == 1 else (micro_batches if schedule == "gpipe" else min(micro_batches, pp))
+    in_flight = 1 if pp == 1 else (micro_batches if schedule == "gpipe" else pp)
