# mutant: stretch_mixed_sum_not_mean
# exercise: mixed
# replaces: mixed_solution
# why: the all-reduced gradient is the SUM over ranks, never divided by the world size
@@
-        m.grad = g.div_(world).float()
+        m.grad = g.float()
