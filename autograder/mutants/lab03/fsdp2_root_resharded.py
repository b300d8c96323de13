# mutant: fsdp2_root_resharded
# exercise: fsdp2
# replaces: fsdp2_solution
# why: passes reshard_after_forward=True to the root too: it frees and re-gathers the parameters the backward needs first (one all-gather more per step than torch's default)
@@
-    fully_shard(model, mesh=mesh)  # root last, at the default: kept gathered from forward into backward
+    fully_shard(model, mesh=mesh, reshard_after_forward=reshard_after_forward)  # root last
