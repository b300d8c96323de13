# mutant: allreduce_zero_fill
# exercise: replicas
# replaces: allreduce_solution
# why: gives every missing grad zeros: unused-everywhere parameters get a grad and weight decay moves them
@@
-    ranks only gets the average with zeros from the others (as DDP with ``find_unused_parameters=True``)."""
+    ranks only
+    gets the average with zeros from the others (as DDP with ``find_unused_parameters=True``)."""
@@
-    used = torch.tensor([float(p.grad is not None) for p in params], device=params[0].device)
-    dist.all_reduce(used)
-    for p, n_used in zip(params, used.tolist(), strict=True):
-        if n_used == 0:
-            continue  # unused on every rank: keep None so the optimizer skips it
+    for p in params:
