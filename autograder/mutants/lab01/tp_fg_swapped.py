# mutant: tp_fg_swapped
# exercise: tp
# replaces: tp_solution
# why: column-parallel uses g and row-parallel uses f (the conjugate pair swapped)
@@
-        return nn.functional.linear(CopyToTP.apply(x), self.weight, self.bias)
+        return nn.functional.linear(ReduceFromTP.apply(x), self.weight, self.bias)
@@
-        return ReduceFromTP.apply(nn.functional.linear(x, self.weight)) + self.bias
+        return CopyToTP.apply(nn.functional.linear(x, self.weight)) + self.bias
