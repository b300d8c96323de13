# mutant: zero2_all_reduce
# exercise: zero2
# replaces: zero2_solution
# why: all-reduces the whole gradient and keeps its own chunk: the right values, but every rank receives the
#      whole gradient (ZeRO-1's traffic pattern, not a reduce-scatter)
@@
-    out = flat.new_empty(chunk)
-    dist.reduce_scatter_single(out, flat)  # SUM of chunk r lands on rank r
+    dist.all_reduce(flat)
+    out = flat[dist.get_rank() * chunk:(dist.get_rank() + 1) * chunk].clone()
