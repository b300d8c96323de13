# mutant: elastic_world1_shortcut
# exercise: elastic
# replaces: elastic_solution
# why: a one-rank fast path that restarts the epoch: the world 2 -> 1 resume repeats what was consumed
@@
+    if world_size == 1:
+        return [lab04.epoch_order(n, seed, epoch)[i : i + batch_size] for i in range(0, n, batch_size)]
     rest = lab04.epoch_order(n, seed, epoch)[consumed:]
