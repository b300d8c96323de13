# mutant: fsdp2_tensor_ratio
# exercise: fsdp2
# replaces: fsdp2_solution
# why: the ratio computed with tensor sums and returned as a 0-dim tensor, not a float (types)
@@
-    dot = sum(float((grads[k].double() * reference[k].double()).sum()) for k in reference)
-    ref = sum(float((reference[k].double() ** 2).sum()) for k in reference)
+    dot = sum((grads[k].double() * reference[k].double()).sum() for k in reference)
+    ref = sum((reference[k].double() ** 2).sum() for k in reference)
