# mutant: fsdp2_ratio_of_sums
# exercise: fsdp2
# replaces: fsdp2_solution
# why: the ratio as sum(g) / sum(r) (a ratio of sums, issue 34 class 3): exact on gradients that are a
#      multiple of the reference, off on any others (noise, a flipped sign)
@@
-    dot = sum(float((grads[k].double() * reference[k].double()).sum()) for k in reference)
-    ref = sum(float((reference[k].double() ** 2).sum()) for k in reference)
+    dot = sum(float(grads[k].double().sum()) for k in reference)
+    ref = sum(float(reference[k].double().sum()) for k in reference)
