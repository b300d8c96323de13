# mutant: distributed_shared_every_rank
# exercise: distributed
# replaces: distributed_solution
# why: every rank writes the shared files: concurrent writes to one path (issue 11)
@@
-    if rank == 0:  # replicated state: one writer, or the ranks race on one path
+    if True:
