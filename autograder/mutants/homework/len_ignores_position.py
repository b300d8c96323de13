# mutant: len_ignores_position
# exercise: sampler
# replaces: fttrainer/sampler.py
# why: len(sampler) is the epoch's step count, not the steps left: right at the start of an epoch only
@@
-        return self.steps_per_epoch - self.consumed // self.global_batch
+        return self.steps_per_epoch
