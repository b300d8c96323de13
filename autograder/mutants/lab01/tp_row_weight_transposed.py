# mutant: tp_row_weight_transposed
# exercise: tp
# replaces: tp_solution
# why: the row-parallel shard stored as [k, d_model] and applied as x @ weight: the same numbers, but not
#      nn.Linear's [out, in] layout (a checkpoint or torch's RowwiseParallel would not line up)
@@
-        self.weight = nn.Parameter(dense.weight.detach()[:, r * k:(r + 1) * k].clone())
+        self.weight = nn.Parameter(dense.weight.detach()[:, r * k:(r + 1) * k].t().clone())
@@
-        return ReduceFromTP.apply(nn.functional.linear(x, self.weight)) + self.bias
+        return ReduceFromTP.apply(x @ self.weight) + self.bias
