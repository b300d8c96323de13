# mutant: zero1_second_grad_copy
# exercise: zero1
# replaces: zero1_solution
# why: flattens the gradients into a new buffer while every p.grad stays alive: two full copies of the gradients at the peak, which then is no lower than DDP's
@@
-            flat = b.flat_grads()  # the p.grads become views of it: the gradients exist once
+            flat = lab03.flatten([torch.zeros_like(p) if p.grad is None else p.grad for p in b.params],
+                                 b.chunk * b.world)
