# mutant: no_seed_check
# exercise: elastic
# replaces: fttrainer/sampler.py
# why: load_state_dict checks size and global batch but not the seed: another shuffle resumes silently
@@
-        for key in ("size", "global_batch", "seed"):
+        for key in ("size", "global_batch"):
