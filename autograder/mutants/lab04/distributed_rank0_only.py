# mutant: distributed_rank0_only
# exercise: distributed
# replaces: distributed_solution
# why: only rank 0 writes: the other ranks' RNG and position are lost
@@
-    for name, obj in mine.items():
+    for name, obj in (mine if rank == 0 else {}).items():
