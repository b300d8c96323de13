# mutant: len_counts_micro_batches
# exercise: sampler
# replaces: fttrainer/sampler.py
# why: len(sampler) counts this rank's micro-batches (steps x accum), not the optimizer steps left
@@
-        return self.steps_per_epoch - self.consumed // self.global_batch
+        return (self.steps_per_epoch - self.consumed // self.global_batch) * self.accum
