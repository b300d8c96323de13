# mutant: measure_efficiency_no_world
# exercise: measure
# replaces: measure_solution
# why: efficiency as speed-up over world 1, not divided by the world size
def summarize(raw: pd.DataFrame, threads_per_rank: int = 1) -> pd.DataFrame:
    """``raw`` has columns impl, world, batch_per_rank, step_s (NaN where a run failed). Return a copy with
    the
    columns samples_per_s, efficiency and core_s_per_1k added (definitions above)."""
    ### BEGIN SOLUTION
    out = raw.copy()
    out["samples_per_s"] = out["world"] * out["batch_per_rank"] / out["step_s"]
    base = out[out["world"] == 1].set_index("impl")["samples_per_s"]
    out["efficiency"] = out["samples_per_s"] / out["impl"].map(base)
    out["core_s_per_1k"] = 1000 * threads_per_rank * out["step_s"] / out["batch_per_rank"]
    return out
    ### END SOLUTION


def max_params_per_rank(budget_bytes: float, optimizer: str = "sgd_momentum",
                        gradient_as_bucket_view: bool = False) -> int:
    """Largest parameter count whose fp32 DDP training state fits ``budget_bytes`` per rank (activations
    excluded).
    ``optimizer``: "sgd", "sgd_momentum" or "adam"; anything else raises ValueError naming it."""
    ### BEGIN SOLUTION
    state = {"sgd": 0, "sgd_momentum": 4, "adam": 8}
    if optimizer not in state:
        raise ValueError(f"optimizer must be one of {sorted(state)}, got {optimizer!r}")
    per_param = 4 + 4 + (0 if gradient_as_bucket_view else 4) + state[optimizer]
    return int(budget_bytes // per_param)
    ### END SOLUTION
