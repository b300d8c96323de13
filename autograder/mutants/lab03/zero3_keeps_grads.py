# mutant: zero3_keeps_grads
# exercise: zero3
# replaces: zero3_solution
# why: never drops the full p.grad after the reduce-scatter: the first step is right, the next backward
#      accumulates into the stale gradients (and they stay alive between steps)
@@
         flat = lab03.flatten([p.grad for p in self.params], self.chunk * self.world)
-        for p in self.params:
-            p.grad = None
