# mutant: allreduce_forgot_average
# exercise: replicas
# replaces: allreduce_solution
# why: sums gradients but never divides by world size
@@
-    ranks only gets the average with zeros from the others (as DDP with ``find_unused_parameters=True``)."""
+    ranks only
+    gets the average with zeros from the others (as DDP with ``find_unused_parameters=True``)."""
@@
-    world = dist.get_world_size()
@@
-        p.grad.div_(world)
