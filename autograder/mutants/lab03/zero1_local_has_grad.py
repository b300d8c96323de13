# mutant: zero1_local_has_grad
# exercise: zero1
# replaces: zero1_solution
# why: the old reference's rule (issue 33): each owner decides "no gradient -> skip" from its own p.grad, so a
#      parameter used only on rank 0 whose shard another rank owns never moves (DDP moves it by the average)
@@
-            used = b.grad_flags()  # 1 where THIS rank has a gradient: ranks may use different parameters
-            dist.all_reduce(used)  # agreed: a gradient on any rank steps the parameter everywhere (DDP's rule)
+            used = b.grad_flags()  # my own gradients decide which of my pieces step
