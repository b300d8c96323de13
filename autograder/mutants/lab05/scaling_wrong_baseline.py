# mutant: scaling_wrong_baseline
# exercise: scaling
# replaces: scaling_solution
# why: efficiency against the first world-1 row of the table whatever its mode (strong vs weak baselines mixed)
def efficiency(table: pd.DataFrame) -> pd.DataFrame:
    """Copy of ``table`` with ``efficiency`` against the world-1 row of the same mode."""
    ### BEGIN SOLUTION
    out = table.copy()
    base = float(out[out["world"] == 1]["samples_per_s"].iloc[0])
    out["efficiency"] = out["samples_per_s"] / (out["world"] * base)
    return out
    ### END SOLUTION


def noise_scale(g2_small: float, g2_big: float, b_small: float, b_big: float) -> dict:
    """Unbiased |G|^2, tr(Sigma) and B_simple from E|g|^2 at two batch sizes."""
    ### BEGIN SOLUTION
    g2 = (b_big * g2_big - b_small * g2_small) / (b_big - b_small)
    trace_sigma = (g2_small - g2_big) / (1 / b_small - 1 / b_big)
    return {"g2": g2, "trace_sigma": trace_sigma, "b_simple": trace_sigma / g2}
    ### END SOLUTION


def scaled_lr(base_lr: float, base_batch: int, batch: int, rule: str, step: int = 0, warmup: int = 0) -> float:
    """Learning rate at ``step`` for ``batch`` under the linear or square-root rule with linear warm-up."""
    ### BEGIN SOLUTION
    k = batch / base_batch
    if rule == "linear":
        target = base_lr * k
    elif rule == "sqrt":
        target = base_lr * math.sqrt(k)
    else:
        raise ValueError(f"rule must be 'linear' or 'sqrt', got {rule!r}")
    ramp = 1.0 if warmup <= 0 else min(1.0, step / warmup)
    return base_lr + (target - base_lr) * ramp
    ### END SOLUTION
