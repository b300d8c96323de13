"""Candidate configurations for the decision exercise: scenario tables with a known shape (graded) and the
lab model's own table, built from the student's cost models (``memory_per_rank``, ``ddp_step_time``).

A candidate is one row: strategy ("none", "dp", "zero", "tp", "pp"), degrees dp / zero / tp / pp, ranks
(= dp * tp * pp), mem_bytes (per rank) and step_s (seconds per global batch).
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pandas as pd

COLUMNS = ["strategy", "dp", "zero", "tp", "pp", "ranks", "mem_bytes", "step_s"]
GB = 1e9


def _row(
    strategy: str, dp: int = 1, zero: int = 0, tp: int = 1, pp: int = 1, mem: float = 1.0, step: float = 1.0
) -> dict:
    return {
        "strategy": strategy,
        "dp": dp,
        "zero": zero,
        "tp": tp,
        "pp": pp,
        "ranks": dp * tp * pp,
        "mem_bytes": float(mem),
        "step_s": float(step),
    }


def scenario(name: str) -> tuple[pd.DataFrame, dict]:
    """A named scenario: (candidates, keyword arguments of ``decide``). Names: ``SCENARIOS``."""
    kw = {"mem_budget": 80 * GB, "global_batch": 512, "micro_batch": 8, "gpus_per_node": 8, "max_ranks": 64}
    if name == "do not split":  # communication costs more than the split saves
        rows = [
            _row("none", mem=20 * GB, step=1.00),
            _row("dp", dp=2, mem=20 * GB, step=1.10),
            _row("dp", dp=8, mem=20 * GB, step=1.60),
            _row("zero", dp=8, zero=1, mem=9 * GB, step=1.70),
        ]
    elif name == "split pays":
        rows = [
            _row("none", mem=20 * GB, step=1.00),
            _row("dp", dp=2, mem=20 * GB, step=0.55),
            _row("dp", dp=8, mem=20 * GB, step=0.16),
            _row("dp", dp=16, mem=20 * GB, step=0.155),
        ]
    elif name == "dp at global batch / micro-batch":
        kw.update(global_batch=32, micro_batch=8)  # at most 4 data-parallel replicas
        rows = [
            _row("none", mem=20 * GB, step=1.00),
            _row("dp", dp=4, mem=20 * GB, step=0.30),
            _row("dp", dp=8, mem=20 * GB, step=0.18),
            _row("dp", dp=16, mem=20 * GB, step=0.12),
        ]
    elif name == "tp only inside a node":
        kw.update(gpus_per_node=4)
        rows = [
            _row("none", mem=200 * GB, step=1.0),
            _row("tp", tp=8, mem=30 * GB, step=0.20),
            _row("tp", tp=4, mem=55 * GB, step=0.35),
            _row("pp", pp=8, mem=40 * GB, step=0.45),
        ]
    elif name == "memory forces zero":
        rows = [
            _row("none", mem=120 * GB, step=1.0),
            _row("dp", dp=8, mem=120 * GB, step=0.2),
            _row("zero", dp=8, zero=1, mem=95 * GB, step=0.21),
            _row("zero", dp=8, zero=2, mem=85 * GB, step=0.22),
            _row("zero", dp=8, zero=3, mem=20 * GB, step=0.30),
        ]
    elif name == "over the rank budget":
        kw.update(max_ranks=8)
        rows = [
            _row("none", mem=20 * GB, step=1.0),
            _row("dp", dp=8, mem=20 * GB, step=0.20),
            _row("dp", dp=32, mem=20 * GB, step=0.06),
        ]
    elif name == "on every limit":  # the fast row meets each feasibility rule with equality: it stays in
        kw.update(global_batch=64, micro_batch=8, gpus_per_node=4, max_ranks=32)
        rows = [
            _row("none", mem=200 * GB, step=1.0),
            _row("pp", pp=2, mem=79 * GB, step=0.9),
            _row("zero", dp=8, zero=3, tp=4, mem=80 * GB, step=0.2),  # 80 GB, tp 4, 8 x 8 = 64, 32 ranks
        ]
    elif name == "tolerance is inclusive":  # 1.25 <= 1.0 * (1 + 0.25), exactly representable
        kw.update(tolerance=0.25)
        rows = [_row("dp", dp=2, mem=20 * GB, step=1.0), _row("none", mem=20 * GB, step=1.25)]
    elif name == "tolerance is relative":  # 10.4 is within 5 % of 10.0, not within 0.05 s
        rows = [_row("dp", dp=2, mem=20 * GB, step=10.0), _row("none", mem=20 * GB, step=10.4)]
    elif name == "ties":  # same ranks: the smaller step_s; same step_s too: the earlier row
        rows = [
            _row("none", mem=20 * GB, step=2.0),
            _row("dp", dp=4, mem=20 * GB, step=0.50),
            _row("tp", tp=4, mem=20 * GB, step=0.48),
            _row("pp", pp=4, mem=20 * GB, step=0.48),
        ]
    elif name == "nothing fits":
        kw.update(mem_budget=10 * GB)
        rows = [_row("none", mem=120 * GB, step=1.0), _row("zero", dp=8, zero=3, mem=15 * GB, step=0.3)]
    else:
        raise ValueError(f"unknown scenario {name!r}; known: {SCENARIOS}")
    return pd.DataFrame(rows, columns=COLUMNS), kw


SCENARIOS = (
    "do not split",
    "split pays",
    "dp at global batch / micro-batch",
    "tp only inside a node",
    "memory forces zero",
    "over the rank budget",
    "on every limit",
    "tolerance is inclusive",
    "tolerance is relative",
    "ties",
    "nothing fits",
)


def random_scenario(rng: random.Random) -> tuple[pd.DataFrame, dict]:
    """A random table (6-12 candidates) and budgets; some have no feasible candidate at all."""
    kw = {
        "mem_budget": rng.choice([16, 40, 80]) * GB,
        "global_batch": rng.choice([16, 64, 256, 1024]),
        "micro_batch": rng.choice([1, 4, 8]),
        "gpus_per_node": rng.choice([2, 4, 8]),
        "max_ranks": rng.choice([4, 16, 64]),
    }
    rows = [_row("none", mem=rng.uniform(5, 150) * GB, step=1.0)]
    for _ in range(rng.randint(5, 11)):
        kind = rng.choice(["dp", "zero", "tp", "pp"])
        deg = rng.choice([2, 4, 8, 16, 32])
        step = round(rng.uniform(0.05, 1.5), 3)
        mem = rng.uniform(2, 150) * GB
        if kind == "dp":
            rows.append(_row("dp", dp=deg, mem=mem, step=step))
        elif kind == "zero":
            rows.append(_row("zero", dp=deg, zero=rng.randint(1, 3), mem=mem, step=step))
        elif kind == "tp":
            rows.append(_row("tp", tp=deg, mem=mem, step=step))
        else:
            rows.append(_row("pp", pp=deg, mem=mem, step=step))
    return pd.DataFrame(rows, columns=COLUMNS), kw


def lab_candidates(
    memory_fn: Callable,
    step_fn: Callable,
    *,
    n_params: int,
    act_bytes: float,
    act_replicated_bytes: float,
    act_boundary_bytes: float,
    compute_s: float,
    alpha: float,
    beta: float,
    layers: int,
    worlds: list[int],
    micro_batches: int,
    param_bytes: int = 4,
    grad_bytes: int = 4,
    optim_bytes: int = 8,
) -> pd.DataFrame:
    """Candidates for the lab model from the student's cost models. ``act_bytes``: everything one batch saves
    through the unsplit model; ``act_replicated_bytes``: the part of it tensor parallelism does not split (the
    tensors every TP rank holds whole: block inputs, the head's input, the loss's log-softmax).

    DP / ZeRO-k over n ranks: ``step_fn(compute_s / n, grad bytes, n, alpha, beta)`` (ZeRO-3 moves 1.5x the
    gradient bytes: parameters are gathered again). TP over t: compute / t plus 2 all-reduces per block
    (g forward, f backward) of the boundary activation (``step_fn(0, ...)`` is one all-reduce). PP over p
    stages, m micro-batches: compute / p stretched by the bubble (m + p - 1) / m, plus (m + p - 2)
    activation sends of alpha + S * beta each way. TP memory: ``memory_fn`` divides its ``act_bytes`` by t
    and adds ``act_replicated_bytes`` whole, so it gets the split part and the replicated part apart.

    Every step_s is *simulated*: the cost models evaluated with the caller's calibration (compute and the
    alpha-beta fit measured on the caller's machine and backend), not a measurement at that world size.
    """
    if not 0.0 <= act_replicated_bytes <= act_bytes:
        raise ValueError(
            f"act_replicated_bytes must lie in [0, act_bytes = {act_bytes}], got {act_replicated_bytes!r}"
        )
    mem = {"param_bytes": param_bytes, "grad_bytes": grad_bytes, "optim_bytes": optim_bytes}
    g = n_params * grad_bytes
    rows = [_row("none", mem=memory_fn(n_params, act_bytes=act_bytes, **mem)["total"], step=compute_s)]
    for n in worlds:
        if n < 2:
            continue
        for z in (0, 1, 2, 3):
            m = memory_fn(n_params, world=n, zero=z, act_bytes=act_bytes, **mem)["total"]
            s = step_fn(compute_s / n, g * (1.5 if z == 3 else 1.0), n, alpha, beta)
            rows.append(_row("dp" if z == 0 else "zero", dp=n, zero=z, mem=m, step=s))
        if n <= layers:
            m = memory_fn(
                n_params,
                world=n,
                pp=n,
                act_bytes=act_bytes,
                micro_batches=micro_batches,
                layers=layers,
                **mem,
            )["total"]
            mb = act_boundary_bytes / micro_batches
            s = compute_s / n * (micro_batches + n - 1) / micro_batches + 2 * (micro_batches + n - 2) * (
                alpha + mb * beta
            )
            rows.append(_row("pp", pp=n, mem=m, step=s))
        m = memory_fn(  # the block inputs are replicated on every TP rank: only the rest shrinks by t
            n_params,
            world=n,
            tp=n,
            act_bytes=act_bytes - act_replicated_bytes,
            act_replicated_bytes=act_replicated_bytes,
            **mem,
        )["total"]
        s = compute_s / n + 2 * layers * step_fn(0.0, act_boundary_bytes, n, alpha, beta)
        rows.append(_row("tp", tp=n, mem=m, step=s))
    return pd.DataFrame(rows, columns=COLUMNS)


def max_params(memory_fn: Callable, budget: float, **strategy: object) -> int:
    """Largest parameter count ``n`` with ``memory_fn(n, **strategy)["total"] <= budget`` (bisection; 0 if
    not even activations fit)."""
    lo, hi = 0, 1
    while memory_fn(hi, **strategy)["total"] <= budget and hi < 2**60:
        lo, hi = hi, hi * 2
    if memory_fn(lo, **strategy)["total"] > budget:
        return 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if memory_fn(mid, **strategy)["total"] <= budget:
            lo = mid
        else:
            hi = mid
    return lo
