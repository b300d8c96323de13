# mutant: tail_not_dropped
# exercise: sampler
# replaces: fttrainer/sampler.py
# why: rounds the steps per epoch up: the tail becomes a short last step instead of being dropped
#      (no difference when the global batch divides the dataset, as in every trainer run)
@@
-        return self.size // self.global_batch
+        return -(-self.size // self.global_batch)
