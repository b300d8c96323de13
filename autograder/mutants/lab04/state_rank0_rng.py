# mutant: state_rank0_rng
# exercise: state
# replaces: state_solution
# why: one checkpoint per job: every rank restores rank 0's RNGs, so all ranks draw the same dropout masks
@@
-    rng = state["rng"]  # last: building the trainer above consumed randomness
+    rng = state["rng"]
+    if dist.is_initialized():
+        dist.broadcast_object_list(box := [rng], src=0)
+        rng = box[0]
