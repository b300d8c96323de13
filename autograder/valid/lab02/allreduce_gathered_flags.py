# valid: allreduce_gathered_flags
# exercise: replicas
# replaces: allreduce_solution
# why: which parameters need a reduction is agreed with an all_gather of every rank's flags (instead of an
#      all_reduce of them), and the average is an in-place division: the same gradients on every rank, the
#      same None for a parameter unused everywhere
def average_gradients(model: nn.Module) -> None:
    """After ``backward()``: replace every trainable parameter's ``.grad`` by its average over all ranks."""
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        return
    world = dist.get_world_size()
    mine = torch.tensor([p.grad is not None for p in params], dtype=torch.float32)
    everyone = [torch.zeros_like(mine) for _ in range(world)]
    dist.all_gather(everyone, mine)
    used_anywhere = torch.stack(everyone).sum(dim=0) > 0
    for p, used in zip(params, used_anywhere.tolist(), strict=True):
        if not used:
            continue
        if p.grad is None:
            p.grad = torch.zeros_like(p)
        dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)
        p.grad /= world
