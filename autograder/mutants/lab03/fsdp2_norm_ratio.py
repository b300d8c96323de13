# mutant: fsdp2_norm_ratio
# exercise: fsdp2
# replaces: fsdp2_solution
# why: the ratio of the norms |g| / |r|: blind to direction, so a flipped sign passes and noise along no
#      component of the reference moves it
@@
-    dot = sum(float((grads[k].double() * reference[k].double()).sum()) for k in reference)
-    ref = sum(float((reference[k].double() ** 2).sum()) for k in reference)
+    dot = math.sqrt(sum(float((grads[k].double() ** 2).sum()) for k in reference))
+    ref = math.sqrt(sum(float((reference[k].double() ** 2).sum()) for k in reference))
