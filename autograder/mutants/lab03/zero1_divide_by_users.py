# mutant: zero1_divide_by_users
# exercise: zero1
# replaces: zero1_solution
# why: agrees on which parameters have a gradient, but averages each over the ranks that used it instead of over
#      all ranks: a parameter used on one rank of two gets twice DDP's gradient (SGD's step shows it)
@@
-            b.set_piece_grads(grad_shard.div_(self.world), used > 0)  # None where no rank has a gradient
+            users = {id(p): max(int(n), 1) for p, n in zip(b.params, used)}
+            for p, piece, at in b.pieces:
+                grad_shard[at:at + piece.numel()].div_(users[id(p)])  # the mean over the ranks that used it
+            b.set_piece_grads(grad_shard, used > 0)
