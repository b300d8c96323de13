# mutant: uneven_drop_local
# exercise: uneven
# replaces: uneven_solution
# why: drop_last by each rank's own count, without agreeing on the minimum: the ranks with more batches hang
#   in DDP's all-reduce (a LaunchTimeout)
def run_epoch(ddp: torch.nn.Module, opt: torch.optim.Optimizer, batches: list, strategy: str) -> int:
    """One epoch over this rank's ``batches`` that cannot hang when ranks hold different counts."""
    ### BEGIN SOLUTION
    if strategy == "join":
        with Join([ddp]):
            for x, y in batches:
                lab05.sgd_step(ddp, opt, x, y)
        return len(batches)
    if strategy == "drop_last":
        for x, y in batches:
            lab05.sgd_step(ddp, opt, x, y)
        return len(batches)
    if strategy == "pad":
        n = torch.tensor([len(batches)])
        dist.all_reduce(n, op=dist.ReduceOp.MAX)
        n = int(n)
        for i in range(n):
            real = i < len(batches)
            x, y = batches[i] if real else lab05.dummy_batch()
            lab05.sgd_step(ddp, opt, x, y, weight=1.0 if real else 0.0)
        return n
    raise ValueError(f"strategy must be 'join', 'drop_last' or 'pad', got {strategy!r}")
    ### END SOLUTION
