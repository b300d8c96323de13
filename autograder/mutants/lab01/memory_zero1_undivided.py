# mutant: memory_zero1_undivided
# exercise: memory
# replaces: memory_solution
# why: ZeRO-1 keeps the whole optimizer state on every rank (the stage threshold is off by one)
def memory_per_rank(n_params: int, *, world: int = 1, zero: int = 0, tp: int = 1, pp: int = 1,
                    act_bytes: float = 0.0, act_replicated_bytes: float = 0.0, micro_batches: int = 1,
                    schedule: str = "1f1b", layers: int | None = None, param_bytes: float = 2,
                    grad_bytes: float = 2, optim_bytes: float = 12) -> dict[str, float]:
    """Bytes per rank: params, grads, optimizer, activations, total (rules above)."""
    ### BEGIN SOLUTION
    for name, v in (("world", world), ("tp", tp), ("pp", pp), ("micro_batches", micro_batches)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name} must be an int >= 1, got {v!r}")
    if zero not in (0, 1, 2, 3):
        raise ValueError(f"zero must be 0, 1, 2 or 3, got {zero!r}")
    if world % (tp * pp):
        raise ValueError(f"world = {world} is not divisible by tp * pp = {tp} * {pp} = {tp * pp}")
    if layers is not None and pp > layers:
        raise ValueError(f"pp = {pp} stages for {layers} layers: a stage needs at least one layer")
    if schedule not in ("gpipe", "1f1b"):
        raise ValueError(f"schedule must be 'gpipe' or '1f1b', got {schedule!r}")
    dp = world // (tp * pp)
    local = n_params / (tp * pp)  # model parallelism splits every model state
    params = local * param_bytes / (dp if zero >= 3 else 1)
    grads = local * grad_bytes / (dp if zero >= 2 else 1)
    optimizer = local * optim_bytes / (dp if zero >= 2 else 1)
    in_flight = 1 if pp == 1 else (micro_batches if schedule == "gpipe" else min(micro_batches, pp))
    activations = (act_bytes / tp + act_replicated_bytes) / pp * in_flight
    return {"params": float(params), "grads": float(grads), "optimizer": float(optimizer),
            "activations": float(activations), "total": float(params + grads + optimizer + activations)}
    ### END SOLUTION


def mlp_activation_bytes(batch: int, d_model: int, d_hidden: int, layers: int, classes: int,
                         dtype_bytes: int = 4) -> int:
    """Bytes autograd saves in one forward of LabMLP on ``batch`` samples (what the text lists)."""
    ### BEGIN SOLUTION
    per_sample = layers * (d_model + d_hidden) + d_model + classes  # block inputs + ReLU outputs, head, loss
    return batch * per_sample * dtype_bytes
    ### END SOLUTION
