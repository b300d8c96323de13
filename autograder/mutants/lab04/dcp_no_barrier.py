# mutant: dcp_no_barrier
# exercise: dcp
# replaces: dcp_solution
# why: no final barrier: rank 1 returns (and may announce or load the checkpoint) before rank 0 renamed it
@@
-    dist.barrier()  # nobody returns (and trusts the checkpoint) before the rename
