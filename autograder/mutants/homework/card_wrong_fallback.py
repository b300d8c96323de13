# mutant: card_wrong_fallback
# exercise: card
# replaces: card_solution
# why: the card's fallback says one restart while the drills ran torchrun with --max-restarts 3
@@
-    fallback=Limit(MAX_RESTARTS, "restarts", "torchrun --max-restarts; after that the job stops and a rerun at any "
-                   "world size resumes from the newest complete checkpoint; a changed dataset or config is refused"),
+    fallback=Limit(1, "restarts", "torchrun restarts the group once, then the job stops"),
