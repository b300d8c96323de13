# mutant: zero1_no_value_error
# exercise: zero1
# replaces: zero1_solution
# why: more shards than elements silently gives empty shards instead of a ValueError
def shard_range(numel: int, world: int, rank: int) -> tuple[int, int]:
    """``(start, end)`` of ``rank``'s contiguous shard of a flat vector of ``numel`` elements over ``world``
    ranks: chunk ``ceil(numel / world)``, clipped to ``numel``. ValueError if ``world > numel``."""
    ### BEGIN SOLUTION
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
        self.shard = flat[self.start:self.end].clone()  # my slice of the parameters: the optimizer's master
        self.optimizer = torch.optim.AdamW([self.shard], lr=lr, weight_decay=weight_decay)
        ### END SOLUTION

    @torch.no_grad()
    def step(self, grad_shard: torch.Tensor | None = None) -> None:
        """One AdamW step on my shard (gradient: my slice of the averaged ``p.grad``s, or ``grad_shard``),
        then all-gather the updated shards into every parameter."""
        ### BEGIN SOLUTION
        if grad_shard is None:
            grad_shard = lab03.flatten([p.grad for p in self.params])[self.start:self.end]
        self.shard.grad = grad_shard.clone()
        self.optimizer.step()
        # all_gather_single needs equal pieces: pad my (possibly shorter) shard to chunk
        padded = lab03.flatten([self.shard], self.chunk)
        full = padded.new_empty(self.chunk * self.world)
        dist.all_gather_single(full, padded)
        lab03.unflatten_into(full, self.params)  # the padded tail is dropped here
        ### END SOLUTION
