# valid: fsdp2_dot_product
# exercise: fsdp2
# replaces: fsdp2_solution
# why: the root's reshard_after_forward written out as None (torch's default), the ratio as one dot product
#      of the concatenated gradients in float64, another wording of the message (ratio at 6 significant
#      digits): the same collectives and the same verdicts
def apply_fsdp2(model: nn.Module, names: list[str], reshard_after_forward: bool = True) -> nn.Module:
    """``fully_shard`` every module in ``names``, then the root; returns the model."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh(course_dist.device().type, (dist.get_world_size(),))
    units = [model.get_submodule(name) for name in names]
    for unit in units:
        fully_shard(unit, mesh=mesh, reshard_after_forward=reshard_after_forward)
    return fully_shard(model, mesh=mesh, reshard_after_forward=None)


def check_averaged(grads: dict[str, torch.Tensor], reference: dict[str, torch.Tensor], world: int) -> float:
    """The ratio ``sum(g*r) / sum(r*r)``; AssertionError naming it unless within 1e-3 of 1 (and saying
    "summed" when it is close to ``world``)."""
    names = sorted(reference)
    g = torch.cat([grads[n].reshape(-1).double() for n in names])
    r = torch.cat([reference[n].reshape(-1).double() for n in names])
    ratio = float(torch.dot(g, r) / torch.dot(r, r))
    if not 0.999 <= ratio <= 1.001:
        hint_ = f"; close to world={world}: the gradients look summed" if abs(ratio / world - 1) < 0.01 else ""
        raise AssertionError(f"gradient ratio {ratio:.6g}, want 1 within 1e-3{hint_}")
    return ratio
