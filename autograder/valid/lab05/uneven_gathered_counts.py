# valid: uneven_gathered_counts
# exercise: uneven
# replaces: uneven_solution
# why: the ranks agree on the step count with all_gather of every rank's count and min()/max() locally
#      instead of one all_reduce with MIN/MAX; Join entered through its keyword arguments: same steps, same
#      parameters
def run_epoch(ddp: torch.nn.Module, opt: torch.optim.Optimizer, batches: list, strategy: str) -> int:
    """One epoch over this rank's ``batches`` that cannot hang when ranks hold different counts."""
    if strategy not in ("join", "drop_last", "pad"):
        raise ValueError(f"unknown strategy {strategy!r}: use join, drop_last or pad")
    if strategy == "join":
        with Join(joinables=[ddp], enable=True):
            for x, y in batches:
                lab05.sgd_step(ddp, opt, x, y)
        return len(batches)
    counts = [torch.zeros(1, dtype=torch.long) for _ in range(dist.get_world_size())]
    dist.all_gather(counts, torch.tensor([len(batches)]))
    n = (min if strategy == "drop_last" else max)(int(c) for c in counts)
    dummy = lab05.dummy_batch()
    for i in range(n):
        if i < len(batches):
            lab05.sgd_step(ddp, opt, *batches[i])
        else:
            lab05.sgd_step(ddp, opt, *dummy, weight=0.0)
    return n
