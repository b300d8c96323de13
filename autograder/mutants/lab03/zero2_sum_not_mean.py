# mutant: zero2_sum_not_mean
# exercise: zero2
# replaces: zero2_solution
# why: reduce-scatter sums the gradients but never divides by the world size
@torch.no_grad()
def reduce_scatter_grads(params: list[nn.Parameter]) -> torch.Tensor:
    """This rank's chunk (``ceil(numel / world)`` elements, end padding included) of the gradient averaged
    over ranks; frees the full ``p.grad``s."""
    ### BEGIN SOLUTION
    world = dist.get_world_size()
    chunk = math.ceil(sum(p.numel() for p in params) / world)
    flat = lab03.flatten([p.grad for p in params], chunk * world)  # pad at the end: equal pieces
    for p in params:
        p.grad = None  # the full gradients are no longer needed: only my chunk stays alive
    out = flat.new_empty(chunk)
    dist.reduce_scatter_single(out, flat)  # SUM of chunk r lands on rank r
    return out
    ### END SOLUTION
