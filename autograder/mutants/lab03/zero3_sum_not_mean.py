# mutant: zero3_sum_not_mean
# exercise: zero3
# replaces: zero3_solution
# why: reduce-scatter of the unit's gradients without dividing by the world size
@@
-        self.shard.grad = out.div_(self.world)
+        self.shard.grad = out
