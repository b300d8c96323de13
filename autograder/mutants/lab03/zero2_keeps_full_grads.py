# mutant: zero2_keeps_full_grads
# exercise: zero2
# replaces: zero2_solution
# why: never drops the full p.grad tensors: the gradient memory is not sharded at all
@torch.no_grad()
def reduce_scatter_grads(params: list[nn.Parameter]) -> torch.Tensor:
    """This rank's chunk (``ceil(numel / world)`` elements, end padding included) of the gradient averaged
    over ranks; frees the full ``p.grad``s."""
    ### BEGIN SOLUTION
    world = dist.get_world_size()
    chunk = math.ceil(sum(p.numel() for p in params) / world)
    flat = lab03.flatten([p.grad for p in params], chunk * world)  # pad at the end: equal pieces
    out = flat.new_empty(chunk)
    dist.reduce_scatter_single(out, flat)  # SUM of chunk r lands on rank r
    return out.div_(world)
    ### END SOLUTION
