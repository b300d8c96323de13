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
-            b.set_piece_grads(grad_shard.div_(self.world))  # None for a parameter without a gradient
-        del flat, grad_shard
+            dist.all_reduce(flat)
+            flat.div_(self.world)
         self.sync_groups()
         self.optimizer.step()
-        for b in self.buckets:
-            b.clear_piece_grads()
-            dist.all_gather_single(b.full, b.my_chunk())  # straight into the parameters (views of full)
