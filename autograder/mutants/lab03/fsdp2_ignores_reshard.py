# mutant: fsdp2_ignores_reshard
# exercise: fsdp2
# replaces: fsdp2_solution
# why: ignores the reshard_after_forward argument (always resharded): with False the units still gather twice
@@
-        fully_shard(model.get_submodule(name), mesh=mesh, reshard_after_forward=reshard_after_forward)
+        fully_shard(model.get_submodule(name), mesh=mesh)
