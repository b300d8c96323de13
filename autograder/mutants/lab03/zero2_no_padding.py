# mutant: zero2_no_padding
# exercise: zero2
# replaces: zero2_solution
# why: no end padding: uneven shards give reduce_scatter unequal pieces (wrong padding of uneven shards)
@@
-    flat = lab03.flatten([p.grad for p in params], chunk * world)  # pad at the end: equal pieces
+    flat = lab03.flatten([p.grad for p in params])
