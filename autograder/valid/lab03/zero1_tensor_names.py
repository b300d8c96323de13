# valid: zero1_tensor_names
# exercise: zero1
# replaces: zero1_solution
# why: ZeRO-1 with torch's other collective names (reduce_scatter_tensor / all_gather_into_tensor), the
#      ceiling by floor division, one bucket per parameter group and dtype (not per dtype only), other
#      names, the has-gradient flags agreed by a MAX all-reduce (not a SUM): the same shards, the same
#      arithmetic, the same collectives per step, the same bytes
def shard_range(numel: int, world: int, rank: int) -> tuple[int, int]:
    """``(start, end)`` of ``rank``'s contiguous shard of a flat vector of ``numel`` elements over ``world``
    ranks: chunk ``ceil(numel / world)``, clipped to ``numel``. ValueError if ``world > numel``."""
    if numel < world:
        raise ValueError(f"{world} ranks but only {numel} elements: more shards than elements")
    chunk = -(-numel // world)
    return min(numel, rank * chunk), min(numel, (rank + 1) * chunk)


class ShardedOptimizer(lab03.ShardedOptimizerBase):
    """ZeRO-1: ``optimizer_cls`` whose state covers only this rank's shard of the flat parameters."""

    def __init__(self, params, optimizer_cls: type[torch.optim.Optimizer], **kwargs) -> None:  # noqa: ANN001
        super().__init__(params, optimizer_cls, **kwargs)  # param_groups, zero_grad, schedulers
        self.world, self.rank = dist.get_world_size(), dist.get_rank()
        self.buckets = []
        for group in self.param_groups:
            for params_of_dtype in lab03.dtype_groups(group["params"]):
                numel = sum(p.numel() for p in params_of_dtype)
                bucket = lab03.FlatBucket(params_of_dtype, self.world, self.rank,
                                          shard_range(numel, self.world, self.rank))
                self.buckets.append(bucket)
        self.optimizer = optimizer_cls(lab03.inner_groups(self.param_groups, self.buckets), **kwargs)

    @torch.no_grad()
    def step(self, closure: None = None) -> None:
        """Reduce-scatter the local gradients, step my pieces, all-gather the updated parameters."""
        for bucket in self.buckets:
            grads = bucket.flat_grads()
            mine = torch.empty(bucket.chunk, dtype=grads.dtype)
            dist.reduce_scatter_tensor(mine, grads)
            anywhere = bucket.grad_flags()
            dist.all_reduce(anywhere, op=dist.ReduceOp.MAX)  # a gradient on some rank: step it everywhere
            bucket.set_piece_grads(mine.div_(self.world), anywhere.bool())  # in place: no second chunk
            del grads, mine
        self.sync_groups()
        self.optimizer.step()
        for bucket in self.buckets:
            bucket.clear_piece_grads()
            dist.all_gather_into_tensor(bucket.full, bucket.my_chunk())
