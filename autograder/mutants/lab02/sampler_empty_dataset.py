# mutant: sampler_empty_dataset
# exercise: sampler
# replaces: sampler_solution
# why: pads with `indices * ceil(pad / len(indices))` without guarding the empty dataset: n = 0 raises
#   ZeroDivisionError (issue 10: the old visible tests never tried n = 0)
def rank_indices(n: int, world_size: int, rank: int, *, shuffle: bool = True, seed: int = 0, epoch: int = 0,
                 drop_last: bool = False) -> list[int]:
    """Indices of a dataset of length ``n`` that ``rank`` (of ``world_size``) reads in ``epoch``.

    Must equal ``list(DistributedSampler(range(n), world_size, rank, shuffle=shuffle, seed=seed,
    drop_last=drop_last))`` after ``set_epoch(epoch)``.
    """
    ### BEGIN SOLUTION
    if drop_last and n % world_size != 0:
        # drop the tail so that every rank gets the same count: floor(n / world) each
        num_samples = math.ceil((n - world_size) / world_size)
    else:
        num_samples = math.ceil(n / world_size)
    total = num_samples * world_size
    if shuffle:
        # seed + epoch: every rank computes the same permutation; a new one each epoch
        g = torch.Generator()
        g.manual_seed(seed + epoch)
        indices = torch.randperm(n, generator=g).tolist()
    else:
        indices = list(range(n))
    if drop_last:
        indices = indices[:total]
    else:
        pad = total - len(indices)
        # repeat the head, wrapping again when the pad is longer than the data (n < world); n = 0: nothing
        reps = math.ceil(pad / len(indices))
        indices += (indices * reps)[:pad]
    return indices[rank:total:world_size]  # interleaved: rank r takes r, r+R, r+2R, ...
    ### END SOLUTION
