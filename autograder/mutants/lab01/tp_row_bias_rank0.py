# mutant: tp_row_bias_rank0
# exercise: tp
# replaces: tp_solution
# why: the row bias lives on rank 0 only (zeros elsewhere) and is added inside the all-reduce: the same
#      forward and gradients, but the zero copies also move by the full gradient at a step (which rank holds
#      what, seen only after an update)
@@
-        self.bias = nn.Parameter(dense.bias.detach().clone())  # added once, after the sum
+        self.bias = nn.Parameter(dense.bias.detach().clone() * (dist.get_rank() == 0))
@@
-        return ReduceFromTP.apply(nn.functional.linear(x, self.weight)) + self.bias
+        return ReduceFromTP.apply(nn.functional.linear(x, self.weight) + self.bias)
