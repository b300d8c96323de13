# mutant: allreduce_forgot_average
# exercise: replicas
# replaces: allreduce_solution
# why: sums gradients but never divides by world size
def average_gradients(model: nn.Module) -> None:
    """After ``backward()``: replace every trainable parameter's ``.grad`` by its average over all ranks.
    Frozen parameters are skipped; a parameter unused on every rank keeps ``grad=None``; one used on some
    ranks only
    gets the average with zeros from the others (as DDP with ``find_unused_parameters=True``)."""
    ### BEGIN SOLUTION
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        return
    # one tiny collective so every rank agrees which parameters need a reduction (same collectives everywhere)
    used = torch.tensor([float(p.grad is not None) for p in params], device=params[0].device)
    dist.all_reduce(used)
    for p, n_used in zip(params, used.tolist(), strict=True):
        if n_used == 0:
            continue  # unused on every rank: keep None so the optimizer skips it
        if p.grad is None:
            p.grad = torch.zeros_like(p)  # unused here, used elsewhere: contribute zero
        dist.all_reduce(p.grad)  # SUM
    ### END SOLUTION
