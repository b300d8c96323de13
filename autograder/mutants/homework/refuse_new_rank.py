# mutant: refuse_new_rank
# exercise: state
# replaces: fttrainer/state.py
# why: refuses every rank without local state, also one the saved run did not have (a resume on more ranks)
@@
-    if local is None and int(shared["world_size"]) == sampler.world_size:
+    if local is None:
