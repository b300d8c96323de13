# mutant: scaling_noise_batch
# exercise: scaling
# replaces: scaling_solution
# why: tr(Sigma) normalized by the batch difference instead of 1/b: the wrong batch normalization
@@
-    trace_sigma = (g2_small - g2_big) / (1 / b_small - 1 / b_big)
+    trace_sigma = (g2_small - g2_big) * (b_big - b_small)
