# mutant: tp_row_bias_split
# exercise: tp
# replaces: tp_solution
# why: issue 34 class 2 (same forward, wrong update): each rank keeps bias / N and adds it inside the
#      all-reduce: the output, the input gradient and every local gradient equal the dense block's, but an
#      optimizer step moves each copy by the full gradient, so the effective bias moves N times too far
@@
-        self.bias = nn.Parameter(dense.bias.detach().clone())  # added once, after the sum
+        self.bias = nn.Parameter(dense.bias.detach().clone() / dist.get_world_size())
@@
-        return ReduceFromTP.apply(nn.functional.linear(x, self.weight)) + self.bias
+        return ReduceFromTP.apply(nn.functional.linear(x, self.weight) + self.bias)
