# mutant: zero1_fp64_reduce
# exercise: zero1
# replaces: zero1_solution
# why: reduce-scatters the gradients in float64 "for accuracy": bitwise the same parameters at world 2, but
#      a float64 copy of every gradient lives at the peak (above DDP's) and the reduce-scatter moves 2x bytes
@@
-            flat = b.flat_grads()  # the p.grads become views of it: the gradients exist once
+            flat = b.flat_grads().double()  # sum in float64
@@
-            b.set_piece_grads(grad_shard.div_(self.world), used > 0)  # None where no rank has a gradient
+            b.set_piece_grads(grad_shard.div_(self.world).to(b.dtype), used > 0)
