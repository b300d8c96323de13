# mutant: uneven_join_no_joinable
# exercise: uneven
# replaces: uneven_solution
# why: Join without the model as a joinable (an empty list): Join refuses it, so "join" never runs
def run_epoch(ddp: torch.nn.Module, opt: torch.optim.Optimizer, batches: list, strategy: str) -> int:
    """One epoch over this rank's ``batches`` that cannot hang when ranks hold different counts."""
    ### BEGIN SOLUTION
    if strategy == "join":
        with Join([]):
            for x, y in batches:
                lab05.sgd_step(ddp, opt, x, y)
        return len(batches)
    if strategy in ("drop_last", "pad"):
        n = torch.tensor([len(batches)])
        dist.all_reduce(n, op=dist.ReduceOp.MIN if strategy == "drop_last" else dist.ReduceOp.MAX)
        n = int(n)
        for i in range(n):
            real = i < len(batches)
            x, y = batches[i] if real else lab05.dummy_batch()
            lab05.sgd_step(ddp, opt, x, y, weight=1.0 if real else 0.0)
        return n
    raise ValueError(f"strategy must be 'join', 'drop_last' or 'pad', got {strategy!r}")
    ### END SOLUTION
