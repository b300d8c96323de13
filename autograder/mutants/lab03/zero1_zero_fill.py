# mutant: zero1_zero_fill
# exercise: zero1
# replaces: zero1_solution
# why: hands every piece its slice of the gradient chunk, zeros for parameters without a gradient: AdamW's weight decay and moment decay then move frozen and unused parameters
@@
-            b.set_piece_grads(grad_shard.div_(self.world), used > 0)  # None where no rank has a gradient
+            grad_shard.div_(self.world)
+            for _p, piece, at in b.pieces:
+                piece.grad = grad_shard[at:at + piece.numel()]
