# mutant: scaling_lr_sqrt_of_lr
# exercise: scaling
# replaces: scaling_solution
# why: the square-root rule applied to the whole product, sqrt(base_lr x k), not base_lr x sqrt(k)
@@
-        target = base_lr * math.sqrt(k)
+        target = math.sqrt(base_lr * k)
