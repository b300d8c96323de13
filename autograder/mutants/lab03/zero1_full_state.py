# mutant: zero1_full_state
# exercise: zero1
# replaces: zero1_solution
# why: a 'sharded' optimizer whose wrapped optimizer holds every parameter on every rank (DDP's all-reduce, no all-gather): same results, no saving
@@
-        self.optimizer = optimizer_cls(lab03.inner_groups(self.param_groups, self.buckets), **kwargs)
+        self.optimizer = optimizer_cls([dict(g) for g in self.param_groups], **kwargs)  # every parameter
@@
-            grad_shard = flat.new_empty(b.chunk)
-            dist.reduce_scatter_single(grad_shard, flat)  # SUM of chunk r lands on rank r
-            used = b.grad_flags()  # 1 where THIS rank has a gradient: ranks may use different parameters
-            dist.all_reduce(used)  # agreed: a gradient on any rank steps the parameter everywhere (DDP's rule)
-            b.set_piece_grads(grad_shard.div_(self.world), used > 0)  # None where no rank has a gradient
-        del flat, grad_shard
+            dist.all_reduce(flat)
+            flat.div_(self.world)
         self.sync_groups()
         self.optimizer.step()
-        for b in self.buckets:
-            b.clear_piece_grads()
-            dist.all_gather_single(b.full, b.my_chunk())  # straight into the parameters (views of full)
