# mutant: atomic_no_prune
# exercise: atomic
# replaces: atomic_solution
# why: "keep=3" read as an upper bound nobody enforces: never calls the retention helper, keeps everything
@@
-    lab04.prune(root, final, keep)  # only after the new one is durable: never below keep published ones
