# mutant: zero1_zero_grad_zeros
# exercise: zero1
# replaces: zero1_solution
# why: zero_grad zeroes the gradients in place instead of setting them to None (to reuse the buffers): a
#      parameter unused on the next step then has a zero gradient, which the wrapped optimizer steps
@@
         self.optimizer = optimizer_cls(lab03.inner_groups(self.param_groups, self.buckets), **kwargs)
         ### END SOLUTION
+
+    def zero_grad(self, set_to_none: bool = False) -> None:
+        super().zero_grad(set_to_none=False)  # keep the gradient buffers for the next backward
