# mutant: strided_rank_share
# exercise: sampler
# replaces: fttrainer/sampler.py
# why: rank r takes every world-th index of the step (DistributedSampler's split) instead of its contiguous
#      share: the same global batch, in another order over ranks and micro-batches
@@
-            mine = step[self.rank * per_rank : (self.rank + 1) * per_rank].tolist()
+            mine = step[self.rank :: self.world_size].tolist()
