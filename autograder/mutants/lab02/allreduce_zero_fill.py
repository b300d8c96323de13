# mutant: allreduce_zero_fill
# exercise: replicas
# replaces: allreduce_solution
# why: gives every missing grad zeros: unused-everywhere parameters get a grad and weight decay moves them
def average_gradients(model: nn.Module) -> None:
    """After ``backward()``: replace every trainable parameter's ``.grad`` by its average over all ranks.
    Frozen parameters are skipped; a parameter unused on every rank keeps ``grad=None``; one used on some
    ranks only
    gets the average with zeros from the others (as DDP with ``find_unused_parameters=True``)."""
    ### BEGIN SOLUTION
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        return
    world = dist.get_world_size()
    # one tiny collective so every rank agrees which parameters need a reduction (same collectives everywhere)
    for p in params:
        if p.grad is None:
            p.grad = torch.zeros_like(p)  # unused here, used elsewhere: contribute zero
        dist.all_reduce(p.grad)  # SUM
        p.grad.div_(world)
    ### END SOLUTION
