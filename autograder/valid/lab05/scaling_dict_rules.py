# valid: scaling_dict_rules
# exercise: scaling
# replaces: scaling_solution
# why: efficiency from a groupby transform of each mode's world-1 throughput; the noise scale with the
#      algebra rearranged (B_simple from the two estimates' ratio); the LR rules in a dict with k ** 0.5, the
#      warm-up written as an early return once it is over (step >= warmup, warmup 0 included): the same values
def efficiency(table: pd.DataFrame) -> pd.DataFrame:
    """Copy of ``table`` with ``efficiency`` against the world-1 row of the same mode."""
    out = table.copy()
    one = out["samples_per_s"].where(out["world"] == 1)
    per_mode = one.groupby(out["mode"]).transform("max")
    out["efficiency"] = out["samples_per_s"] / out["world"] / per_mode
    print("baselines:", dict(zip(out["mode"], per_mode)))
    return out


def noise_scale(g2_small: float, g2_big: float, b_small: float, b_big: float) -> dict:
    """Unbiased |G|^2, tr(Sigma) and B_simple from E|g|^2 at two batch sizes."""
    inv_s, inv_b = 1.0 / b_small, 1.0 / b_big
    trace_sigma = (g2_small - g2_big) / (inv_s - inv_b)
    g2 = g2_big - trace_sigma * inv_b  # E|g_B|^2 = |G|^2 + tr(Sigma) / B
    return {"g2": g2, "trace_sigma": trace_sigma, "b_simple": trace_sigma / g2}


def scaled_lr(base_lr: float, base_batch: int, batch: int, rule: str, step: int = 0, warmup: int = 0) -> float:
    """Learning rate at ``step`` for ``batch`` under the linear or square-root rule with linear warm-up."""
    rules = {"linear": lambda k: k, "sqrt": lambda k: k**0.5}
    if rule not in rules:
        raise ValueError(f"unknown scaling rule {rule!r} (use one of {sorted(rules)})")
    target = base_lr * rules[rule](batch / base_batch)
    if step >= warmup:
        return target
    return base_lr + (target - base_lr) * step / warmup
