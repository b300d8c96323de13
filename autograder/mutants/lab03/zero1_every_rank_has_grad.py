# mutant: zero1_every_rank_has_grad
# exercise: zero1
# replaces: zero1_solution
# why: agrees across ranks, but by MIN: a parameter steps only when EVERY rank has a gradient, so one used on
#      some ranks only never moves (DDP steps it by the average over all ranks)
@@
-            dist.all_reduce(used)  # agreed: a gradient on any rank steps the parameter everywhere (DDP's rule)
+            dist.all_reduce(used, op=dist.ReduceOp.MIN)  # stepped only where every rank has a gradient
