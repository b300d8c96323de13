# mutant: elastic_restart_epoch
# exercise: elastic
# replaces: elastic_solution
# why: ignores the saved position: the resumed epoch starts again from its first sample
@@
-    rest = lab04.epoch_order(n, seed, epoch)[consumed:]
+    rest = lab04.epoch_order(n, seed, epoch)
