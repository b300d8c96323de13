# mutant: manifest_from_listing
# exercise: atomic
# replaces: fttrainer/checkpoint.py
# why: a checkpoint counts as complete when shared.pt and whatever its manifest lists verify: a rank whose
#      file never arrived is not missed, and the torn world-2 checkpoint is published, chosen and resumed
@@
-    return {"shared.pt", *(rank_file(r) for r in range(world_size))}
+    return {"shared.pt"}
