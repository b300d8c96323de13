# mutant: tp_row_no_allreduce
# exercise: tp
# replaces: tp_solution
# why: row-parallel adds its partial product and the bias without the all-reduce
@@
-        return ReduceFromTP.apply(nn.functional.linear(x, self.weight)) + self.bias
+        return nn.functional.linear(x, self.weight) + self.bias
