# mutant: uneven_pad_repeat
# exercise: uneven
# replaces: uneven_solution
# why: pads by repeating the rank's last real batch with full weight (as a sampler would): no hang, but those
#   samples are counted twice and the parameters leave the reference
def run_epoch(ddp: torch.nn.Module, opt: torch.optim.Optimizer, batches: list, strategy: str) -> int:
    """One epoch over this rank's ``batches`` that cannot hang when ranks hold different counts."""
    ### BEGIN SOLUTION
    if strategy == "join":
        with Join([ddp]):
            for x, y in batches:
                lab05.sgd_step(ddp, opt, x, y)
        return len(batches)
    if strategy in ("drop_last", "pad"):
        n = torch.tensor([len(batches)])
        dist.all_reduce(n, op=dist.ReduceOp.MIN if strategy == "drop_last" else dist.ReduceOp.MAX)
        n = int(n)
        for i in range(n):
            x, y = batches[min(i, len(batches) - 1)]
            lab05.sgd_step(ddp, opt, x, y)
        return n
    raise ValueError(f"strategy must be 'join', 'drop_last' or 'pad', got {strategy!r}")
    ### END SOLUTION
