# mutant: no_set_epoch
# exercise: sampler
# replaces: fttrainer/sampler.py
# why: the epoch never reaches the shuffle (the classic forgotten DistributedSampler.set_epoch): every epoch
#      trains on the same order
@@
-        g = torch.Generator().manual_seed(self.seed + self.epoch)
+        g = torch.Generator().manual_seed(self.seed)
