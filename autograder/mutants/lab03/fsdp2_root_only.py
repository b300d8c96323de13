# mutant: fsdp2_root_only
# exercise: fsdp2
# replaces: fsdp2_solution
# why: fully_shard applied to the root only: one unit, the whole model gathered at once
@@
-    for name in names:
-        fully_shard(model.get_submodule(name), mesh=mesh, reshard_after_forward=reshard_after_forward)
