# valid: zero3_backward_pre_hook
# exercise: zero3
# replaces: zero3_solution
# why: gathers again before backward with the module's full backward pre-hook (register_full_backward_pre_hook)
#      instead of a hook on the output tensor (found writing answers from the release text alone): the same
#      gathers at the same moments, the same numbers and the same ledger peaks
class FlatParamUnit:
    """ZeRO-3: one wrap unit's parameters, flat, sharded over the ranks; gathered only while in use."""

    def __init__(self, params: list[nn.Parameter]) -> None:
        self.params = list(params)
        self.world, self.rank = dist.get_world_size(), dist.get_rank()
        self.numel = sum(p.numel() for p in self.params)
        self.chunk = math.ceil(self.numel / self.world)
        self.full = lab03.flatten([p.detach() for p in self.params], self.chunk * self.world)
        self.shard = self.full[self.rank * self.chunk:(self.rank + 1) * self.chunk].clone()
        lab03.view_params(self.params, self.full)  # parameters read whatever self.full holds
        self.free()

    @torch.no_grad()
    def gather(self) -> None:
        lab03.alloc_storage(self.full)
        dist.all_gather_single(self.full, self.shard)

    def free(self) -> None:
        lab03.free_storage(self.full)

    @torch.no_grad()
    def reduce_grads(self) -> None:
        flat = lab03.flatten([p.grad for p in self.params], self.chunk * self.world)
        for p in self.params:
            p.grad = None
        out = flat.new_empty(self.chunk)
        dist.reduce_scatter_single(out, flat)
        self.shard.grad = out.div_(self.world)
        self.free()


def attach_zero3(module: nn.Module, unit: FlatParamUnit) -> None:
    """Hooks: gather before forward, free after it, gather again before backward, reduce after it."""
    def pre_forward(_mod, _args):
        unit.gather()

    def post_forward(_mod, _args, out):
        unit.free()  # reshard after forward: the backward gathers again
        return out

    module.register_full_backward_pre_hook(lambda _mod, _grad_out: unit.gather())

    module.register_forward_pre_hook(pre_forward)
    module.register_forward_hook(post_forward)
    lab03.after_all_grads(unit.params, unit.reduce_grads)


