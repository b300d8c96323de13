# mutant: zero2_fp64_reduce
# exercise: zero2
# replaces: zero2_solution
# why: reduce-scatters in float64 "for accuracy" and returns float32: the same gradients and memory after the
#      reduction, but the reduce-scatter moves twice DDP's share of the bytes
@@
-    flat = lab03.flatten([p.grad for p in params], chunk * world)  # pad at the end: equal pieces
+    flat = lab03.flatten([p.grad for p in params], chunk * world).double()  # sum in float64
@@
-    return out.div_(world)
+    return out.div_(world).float()
