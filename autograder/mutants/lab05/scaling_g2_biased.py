# mutant: scaling_g2_biased
# exercise: scaling
# replaces: scaling_solution
# why: |G|^2 taken as the large batch's E|g|^2, without removing its noise term tr(Sigma)/b_big
@@
-    g2 = (b_big * g2_big - b_small * g2_small) / (b_big - b_small)
+    g2 = g2_big
