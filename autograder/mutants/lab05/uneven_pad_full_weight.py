# mutant: uneven_pad_full_weight
# exercise: uneven
# replaces: uneven_solution
# why: pads with the dummy batch at full weight: its nonzero gradient (the biases) moves the parameters
@@
-            lab05.sgd_step(ddp, opt, x, y, weight=1.0 if real else 0.0)
+            lab05.sgd_step(ddp, opt, x, y)
