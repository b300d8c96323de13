# mutant: fsdp2_root_only
# exercise: fsdp2
# replaces: fsdp2_solution
# why: fully_shard applied to the root only: one unit, the whole model gathered at once
def apply_fsdp2(model: nn.Module, names: list[str], reshard_after_forward: bool = True) -> nn.Module:
    """``fully_shard`` every module in ``names``, then the root; returns the model."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    ### BEGIN SOLUTION
    mesh = init_device_mesh(course_dist.device().type, (dist.get_world_size(),))
    fully_shard(model, mesh=mesh, reshard_after_forward=reshard_after_forward)  # root last
    return model
    ### END SOLUTION


def check_averaged(grads: dict[str, torch.Tensor], reference: dict[str, torch.Tensor], world: int) -> float:
    """The ratio ``sum(g*r) / sum(r*r)``; AssertionError naming it unless within 1e-3 of 1 (and saying
    "summed" when it is close to ``world``)."""
    ### BEGIN SOLUTION
    dot = sum(float((grads[k].double() * reference[k].double()).sum()) for k in reference)
    ref = sum(float((reference[k].double() ** 2).sum()) for k in reference)
    ratio = dot / ref
    if abs(ratio - 1) > 1e-3:
        why = f" - summed over {world} ranks, not averaged?" if abs(ratio - world) < 1e-2 * world else ""
        raise AssertionError(f"gradients are {ratio:.4f}x the single-process gradient{why}")
    return ratio
    ### END SOLUTION
