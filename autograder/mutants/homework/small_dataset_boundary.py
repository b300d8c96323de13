# mutant: small_dataset_boundary
# exercise: sampler
# replaces: fttrainer/sampler.py
# why: refuses a dataset of exactly one global batch too (<= instead of <): the boundary of the rule
@@
-        if size < global_batch:
+        if size <= global_batch:
