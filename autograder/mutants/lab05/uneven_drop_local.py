# mutant: uneven_drop_local
# exercise: uneven
# replaces: uneven_solution
# why: drop_last by each rank's own count, without agreeing on the minimum: the ranks with more batches hang
#   in DDP's all-reduce (a LaunchTimeout)
@@
-        with Join([ddp]):  # DDP is the joinable: it knows which all-reduces to shadow
+        with Join([ddp]):
@@
-    if strategy in ("drop_last", "pad"):
+    if strategy == "drop_last":
+        for x, y in batches:
+            lab05.sgd_step(ddp, opt, x, y)
+        return len(batches)
+    if strategy == "pad":
         n = torch.tensor([len(batches)])
-        dist.all_reduce(n, op=dist.ReduceOp.MIN if strategy == "drop_last" else dist.ReduceOp.MAX)
+        dist.all_reduce(n, op=dist.ReduceOp.MAX)
