# mutant: prune_counts_incomplete
# exercise: atomic
# replaces: fttrainer/checkpoint.py
# why: retention counts every step-N folder, incomplete ones too: an unfinished newer folder costs a complete
#      checkpoint (keep_last=2 keeps one)
@@
-    complete = [p for p in list_checkpoints(root) if checkpoint_problem(p, hash_files=False) is None]
+    complete = list_checkpoints(root)
