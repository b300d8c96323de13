# mutant: zero2_pad_front
# exercise: zero2
# replaces: zero2_solution
# why: pads at the front instead of the end: every chunk is shifted by the padding (which rank holds it)
@@
-    flat = lab03.flatten([p.grad for p in params], chunk * world)  # pad at the end: equal pieces
+    grads = lab03.flatten([p.grad for p in params])
+    flat = torch.cat([grads.new_zeros(chunk * world - grads.numel()), grads])
