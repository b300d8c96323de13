# mutant: no_set_epoch
# exercise: sampler
# replaces: fttrainer/sampler.py (package module: body appended; re-binds ElasticSampler.epoch_order)
# why: the epoch never reaches the shuffle (the classic forgotten DistributedSampler.set_epoch): every epoch
#      trains on the same order


def _epoch_order_without_epoch(self):
    g = torch.Generator().manual_seed(self.seed)
    return torch.randperm(self.size, generator=g)


ElasticSampler.epoch_order = _epoch_order_without_epoch
