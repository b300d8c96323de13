# valid: zero2_cat_padding
# exercise: zero2
# replaces: zero2_solution
# why: pads with torch.cat and a zeros tensor instead of lab03.flatten, torch's other collective name
#      (reduce_scatter_tensor), divides with /=, prints what it reduced: the same chunk (end padding included),
#      the same collective, the same bytes, the full gradients dropped before the reduction
@torch.no_grad()
def reduce_scatter_grads(params: list[nn.Parameter]) -> torch.Tensor:
    """This rank's chunk (``ceil(numel / world)`` elements, end padding included) of the gradient averaged
    over ranks; frees the full ``p.grad``s."""
    world, rank = dist.get_world_size(), dist.get_rank()
    numel = sum(p.numel() for p in params)
    chunk = -(-numel // world)
    grads = [p.grad.reshape(-1) for p in params]
    padded = torch.cat([*grads, grads[0].new_zeros(chunk * world - numel)])
    del grads
    for p in params:
        p.grad = None
    mine = padded.new_empty(chunk)
    dist.reduce_scatter_tensor(mine, padded)
    del padded
    mine /= world
    print(f"rank {rank}: reduced {numel} gradient elements into a chunk of {chunk}")
    return mine
