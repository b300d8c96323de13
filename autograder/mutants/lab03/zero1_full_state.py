# mutant: zero1_full_state
# exercise: zero1
# replaces: zero1_solution
# why: a 'sharded' optimizer keeping AdamW state for every parameter on every rank: same results, no saving
def shard_range(numel: int, world: int, rank: int) -> tuple[int, int]:
    """``(start, end)`` of ``rank``'s contiguous shard of a flat vector of ``numel`` elements over ``world``
    ranks: chunk ``ceil(numel / world)``, clipped to ``numel``. ValueError if ``world > numel``."""
    ### BEGIN SOLUTION
    if world > numel:
        raise ValueError(f"cannot cut {numel} elements into {world} shards (more shards than elements)")
    chunk = math.ceil(numel / world)
    start = min(rank * chunk, numel)
    return start, min(start + chunk, numel)
    ### END SOLUTION


class ShardedAdamW:
    """ZeRO-1: AdamW whose state covers only this rank's shard of the flat parameters."""

    def __init__(self, params: list[nn.Parameter], lr: float = 1e-3, weight_decay: float = 0.01) -> None:
        self.params = list(params)
        self.world, self.rank = dist.get_world_size(), dist.get_rank()
        self.numel = sum(p.numel() for p in self.params)
        self.chunk = math.ceil(self.numel / self.world)
        ### BEGIN SOLUTION
        self.start, self.end = shard_range(self.numel, self.world, self.rank)
        flat = lab03.flatten([p.detach() for p in self.params])
        self.shard = flat.clone()  # the WHOLE vector: every rank updates every parameter
        self.optimizer = torch.optim.AdamW([self.shard], lr=lr, weight_decay=weight_decay)
        ### END SOLUTION

    @torch.no_grad()
    def step(self, grad_shard: torch.Tensor | None = None) -> None:
        """One AdamW step on my shard (gradient: my slice of the averaged ``p.grad``s, or ``grad_shard``),
        then all-gather the updated shards into every parameter."""
        ### BEGIN SOLUTION
        self.shard.grad = lab03.flatten([p.grad for p in self.params]).clone()
        self.optimizer.step()
        lab03.unflatten_into(self.shard, self.params)
        return
        # all_gather_single needs equal pieces: pad my (possibly shorter) shard to chunk
        padded = lab03.flatten([self.shard], self.chunk)
        full = padded.new_empty(self.chunk * self.world)
        dist.all_gather_single(full, padded)
        lab03.unflatten_into(full, self.params)  # the padded tail is dropped here
        ### END SOLUTION
