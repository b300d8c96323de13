# mutant: interval_no_lost_work
# exercise: interval
# replaces: interval_solution
# why: overhead counts saves and restarts but not the half interval of work lost per failure
def young_daly_interval(cost_s: float, mtbf_s: float) -> float:
    """Seconds of work between checkpoints that minimise the expected overhead (first order)."""
    ### BEGIN SOLUTION
    if cost_s <= 0 or mtbf_s <= 0:
        raise ValueError(f"cost_s and mtbf_s must be > 0, got {cost_s}, {mtbf_s}")
    return math.sqrt(2.0 * cost_s * mtbf_s)
    ### END SOLUTION


def expected_overhead(interval_s: float, cost_s: float, mtbf_s: float, restart_s: float = 0.0) -> float:
    """First-order expected overhead (a fraction of the useful work) of checkpointing every ``interval_s``."""
    ### BEGIN SOLUTION
    return cost_s / interval_s + restart_s / mtbf_s
    ### END SOLUTION
