# mutant: atomic_prune_before_publish
# exercise: atomic
# replaces: atomic_solution
# why: order: prunes before the new checkpoint is published (the helper is right, the call site is not):
#      with keep=1 a crash between the prune and the rename leaves no checkpoint at all
@@
+    lab04.prune(root, final, keep)
     os.replace(tmp, final)  # atomic: readers see no directory or the whole one
@@
-    lab04.prune(root, final, keep)  # only after the new one is durable: never below keep published ones
