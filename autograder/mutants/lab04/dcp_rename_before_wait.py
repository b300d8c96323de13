# mutant: dcp_rename_before_wait
# exercise: dcp
# replaces: dcp_solution
# why: rank 0 publishes as soon as async_save returns and waits for the future only afterwards: the staging
#      directory is renamed while the background write is still running (no .metadata yet)
@@
-    future.result()  # this rank's files are written; rank 0's future also covers .metadata (written last)
@@
-    dist.barrier()  # nobody returns (and trusts the checkpoint) before the rename
+    future.result()
+    dist.barrier()  # nobody returns (and trusts the checkpoint) before the rename
