# valid: comm_closed_form
# exercise: comm
# replaces: comm_solution
# why: least squares in closed form over plain Python floats (centred sums) instead of numpy.polyfit, the ring
#      constants taken from lab01.ring_constants for the step time, the break-even solved as
#      comm / (world * sample_s - sample_s): the same alpha, beta, step times and batches
def fit_alpha_beta(sizes: list[float], times: list[float], collective: str, world: int) -> tuple[float, float]:
    """(alpha seconds per message, beta seconds per bus byte) fitted to ``times`` measured at ``sizes``."""
    distinct = len(set(sizes))
    if distinct < 2:
        raise ValueError(f"{distinct} distinct message size(s): a line needs 2")
    steps, factor = lab01.ring_constants(collective, world)
    xs = [factor * float(s) for s in sizes]
    ts = [float(t) for t in times]
    mx, mt = sum(xs) / len(xs), sum(ts) / len(ts)
    beta = sum((x - mx) * (t - mt) for x, t in zip(xs, ts)) / sum((x - mx) ** 2 for x in xs)
    return (mt - beta * mx) / steps, beta


def ddp_step_time(compute_s: float, grad_bytes: float, world: int, alpha: float, beta: float) -> float:
    """Seconds per DDP step: compute, then a ring all-reduce of ``grad_bytes`` (none at world 1)."""
    if world < 1:
        raise ValueError(f"a DDP step needs at least one rank, world = {world}")
    if world == 1:
        return compute_s
    steps, factor = lab01.ring_constants("all_reduce", world)
    return compute_s + steps * alpha + factor * grad_bytes * beta


def dp_break_even_batch(sample_s: float, grad_bytes: float, world: int, alpha: float, beta: float) -> float:
    """Smallest per-rank batch at which ``world`` data-parallel ranks out-run one rank."""
    if world < 2:
        raise ValueError(f"world = {world}: one rank has nothing to break even with")
    comm = ddp_step_time(0.0, grad_bytes, world, alpha, beta)
    return comm / (world * sample_s - sample_s)
