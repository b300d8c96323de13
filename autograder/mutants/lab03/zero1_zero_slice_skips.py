# mutant: zero1_zero_slice_skips
# exercise: zero1
# replaces: zero1_solution
# why: no collective for the flags: a piece whose averaged gradient is all zero is taken as "no gradient" and
#      skipped, but a gradient of exact zeros is still a gradient (AdamW's weight decay moves the parameter)
@@
-            used = b.grad_flags()  # 1 where THIS rank has a gradient: ranks may use different parameters
-            dist.all_reduce(used)  # agreed: a gradient on any rank steps the parameter everywhere (DDP's rule)
-            b.set_piece_grads(grad_shard.div_(self.world), used > 0)  # None where no rank has a gradient
+            grad_shard.div_(self.world)
+            nonzero = {id(p): bool(grad_shard[at:at + piece.numel()].any()) for p, piece, at in b.pieces}
+            b.set_piece_grads(grad_shard, [nonzero.get(id(p), False) for p in b.params])
