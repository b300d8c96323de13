# mutant: tp_shard_is_view
# exercise: tp
# replaces: tp_solution
# why: the column shard is a view of the dense weight: equal until an optimizer step moves both
@@
-        self.weight = nn.Parameter(dense.weight.detach()[r * k:(r + 1) * k].clone())
+        self.weight = nn.Parameter(dense.weight.detach()[r * k:(r + 1) * k])
