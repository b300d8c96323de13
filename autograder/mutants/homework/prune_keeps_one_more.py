# mutant: prune_keeps_one_more
# exercise: atomic
# replaces: fttrainer/checkpoint.py
# why: keeps keep_last checkpoints besides the one just written (keep_last + 1 in all)
@@
-    doomed = [p for p in complete[keep_last:] if newest is None or _step_of(p) < newest]
+    doomed = [p for p in complete[keep_last + 1:] if newest is None or _step_of(p) < newest]
