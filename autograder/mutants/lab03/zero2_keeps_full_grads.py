# mutant: zero2_keeps_full_grads
# exercise: zero2
# replaces: zero2_solution
# why: never drops the full p.grad tensors: the gradient memory is not sharded at all
@@
-    for p in params:
-        p.grad = None  # the full gradients are no longer needed: only my chunk stays alive
