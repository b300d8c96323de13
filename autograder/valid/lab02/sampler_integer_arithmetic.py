# valid: sampler_integer_arithmetic
# exercise: sampler
# replaces: sampler_solution
# why: the same partition as DistributedSampler computed another way: floor/ceil by integer division, the
#      padding drawn with itertools.cycle, each rank's share by a comprehension instead of a strided slice
def rank_indices(n: int, world_size: int, rank: int, *, shuffle: bool = True, seed: int = 0, epoch: int = 0,
                 drop_last: bool = False) -> list[int]:
    """Indices of a dataset of length ``n`` that ``rank`` (of ``world_size``) reads in ``epoch``."""
    import itertools

    per_rank = n // world_size if drop_last else -(-n // world_size)
    total = per_rank * world_size
    if shuffle:
        gen = torch.Generator()
        gen.manual_seed(seed + epoch)
        order = torch.randperm(n, generator=gen).tolist()
    else:
        order = list(range(n))
    if total <= len(order):
        order = order[:total]
    elif order:
        order = order + list(itertools.islice(itertools.cycle(order), total - len(order)))
    return [order[i] for i in range(rank, total, world_size)]
