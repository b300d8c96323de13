# mutant: interval_mtbf_ignores_gpus
# exercise: interval
# replaces: interval_solution
# why: the job fails as often as one GPU: the failure rate does not grow with the number of GPUs
def job_mtbf(gpu_mtbf_s: float, n_gpus: int) -> float:
    """Mean time between failures of a job on ``n_gpus`` GPUs that each fail independently every
    ``gpu_mtbf_s`` seconds on average."""
    ### BEGIN SOLUTION
    if gpu_mtbf_s <= 0 or n_gpus <= 0:
        raise ValueError(f"gpu_mtbf_s and n_gpus must be > 0, got gpu_mtbf_s={gpu_mtbf_s}, n_gpus={n_gpus}")
    return gpu_mtbf_s
    ### END SOLUTION


def young_daly_interval(cost_s: float, mtbf_s: float) -> float:
    """Seconds of work between checkpoints that minimise the expected overhead (first order)."""
    ### BEGIN SOLUTION
    if cost_s <= 0 or mtbf_s <= 0:
        raise ValueError(f"cost_s and mtbf_s must be > 0, got cost_s={cost_s}, mtbf_s={mtbf_s}")
    return math.sqrt(2.0 * cost_s * mtbf_s)
    ### END SOLUTION


def expected_overhead(interval_s: float, cost_s: float, mtbf_s: float, restart_s: float = 0.0) -> float:
    """First-order expected overhead (a fraction of the useful work) of checkpointing every ``interval_s``."""
    ### BEGIN SOLUTION
    if interval_s <= 0 or mtbf_s <= 0:
        raise ValueError(f"interval_s and mtbf_s must be > 0, got interval_s={interval_s}, mtbf_s={mtbf_s}")
    return cost_s / interval_s + (interval_s / 2.0 + restart_s) / mtbf_s
    ### END SOLUTION
