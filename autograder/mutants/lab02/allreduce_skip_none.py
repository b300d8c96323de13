# mutant: allreduce_skip_none
# exercise: replicas
# replaces: allreduce_solution
# why: skips parameters whose local grad is None without asking the others: hangs when a parameter is
#   unused on some ranks only
@@
-    ranks only gets the average with zeros from the others (as DDP with ``find_unused_parameters=True``)."""
+    ranks only
+    gets the average with zeros from the others (as DDP with ``find_unused_parameters=True``)."""
@@
-    used = torch.tensor([float(p.grad is not None) for p in params], device=params[0].device)
-    dist.all_reduce(used)
-    for p, n_used in zip(params, used.tolist(), strict=True):
-        if n_used == 0:
+    for p in params:
+        if p.grad is None:
