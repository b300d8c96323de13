# mutant: comm_algbw
# exercise: comm
# replaces: comm_solution
# why: fits beta on algorithm bytes S instead of bus bytes bus_factor * S
def fit_alpha_beta(sizes: list[float], times: list[float], collective: str, world: int) -> tuple[float, float]:
    """(alpha seconds per message, beta seconds per bus byte) fitted to ``times`` measured at ``sizes``."""
    ### BEGIN SOLUTION
    import numpy as np

    if len(set(sizes)) < 2:
        raise ValueError(f"need at least 2 distinct message sizes to fit a line, got {len(set(sizes))}")
    steps, factor = lab01.ring_constants(collective, world)
    x = np.asarray(sizes, dtype=np.float64)
    slope, intercept = np.polyfit(x, np.asarray(times, dtype=np.float64), 1)
    return float(intercept / steps), float(slope)
    ### END SOLUTION


def ddp_step_time(compute_s: float, grad_bytes: float, world: int, alpha: float, beta: float) -> float:
    """Seconds per DDP step: compute, then a ring all-reduce of ``grad_bytes`` (none at world 1)."""
    ### BEGIN SOLUTION
    if world < 1:
        raise ValueError(f"world must be >= 1, got {world!r}")
    if world == 1:
        return float(compute_s)
    return float(compute_s + 2 * (world - 1) * alpha + 2 * (world - 1) / world * grad_bytes * beta)
    ### END SOLUTION


def dp_break_even_batch(sample_s: float, grad_bytes: float, world: int, alpha: float, beta: float) -> float:
    """Smallest per-rank batch at which ``world`` data-parallel ranks out-run one rank."""
    ### BEGIN SOLUTION
    if world < 2:
        raise ValueError(f"break-even needs world >= 2, got {world!r}")
    comm = ddp_step_time(0.0, grad_bytes, world, alpha, beta)
    # world * b / (b * sample_s + comm) > b / (b * sample_s)  <=>  b > comm / ((world - 1) * sample_s)
    return float(comm / ((world - 1) * sample_s))
    ### END SOLUTION
