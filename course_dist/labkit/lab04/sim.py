"""Lab 04 stretch B: how often to checkpoint, by simulation (a check on the formula, never the formula).

A job needs ``work_s`` seconds of computation. It checkpoints after every ``interval_s`` of work (each save
stalls it ``cost_s``); failures arrive as a Poisson process with mean time between failures ``mtbf_s``; each
failure loses the work since the last completed checkpoint and costs ``restart_s`` to come back (a failure
during a restart restarts the restart). Overhead = wall time / work - 1.

    from course_dist.labkit.lab04 import sim
    df = sim.overhead_curve([60, 300, 900], cost_s=10, mtbf_s=3600, restart_s=30, work_s=2e5)
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

import numpy as np
import pandas as pd


def failure_trace(mtbf_s: float, horizon_s: float, seed: int = 0) -> np.ndarray:
    """Failure times in [0, horizon_s): exponential gaps with mean ``mtbf_s`` (seeded, so every run sees the
    same)."""
    if mtbf_s <= 0 or horizon_s <= 0:
        raise ValueError(f"mtbf_s and horizon_s must be > 0, got {mtbf_s}, {horizon_s}")
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(mtbf_s, size=int(horizon_s / mtbf_s * 2 + 50))
    times = np.cumsum(gaps)
    while times[-1] < horizon_s:  # rare: draw more
        times = np.concatenate([times, times[-1] + np.cumsum(rng.exponential(mtbf_s, size=len(times)))])
    return times[times < horizon_s]


def simulate(
    interval_s: float, cost_s: float, restart_s: float, work_s: float, failures: Sequence[float]
) -> float:
    """Wall-clock seconds to finish ``work_s`` of work under the failure times ``failures`` (sorted).

    Segments that finish before the next failure are skipped over arithmetically, so the cost is O(failures).
    """
    if interval_s <= 0:
        raise ValueError(f"interval_s must be > 0, got {interval_s}")
    failures = list(failures)
    t, done, i, unit = 0.0, 0.0, 0, interval_s + cost_s
    while work_s - done > 1e-9 * work_s:
        i = bisect.bisect_right(failures, t, lo=i)  # failures at or before t happened during a restart
        next_f = failures[i] if i < len(failures) else math.inf
        remaining = work_s - done
        with_ckpt = math.ceil(remaining / interval_s - 1e-9) - 1  # every segment but the last is checkpointed
        k = min(math.floor((next_f - t) / unit), with_ckpt) if next_f < math.inf else with_ckpt
        if k > 0:  # k whole segments + checkpoints complete before the next failure
            t, done = t + k * unit, done + k * interval_s
            continue
        seg = min(interval_s, remaining)
        end = t + seg + (cost_s if remaining - seg > 1e-9 * work_s else 0.0)
        if next_f < end:
            t = next_f + restart_s  # lose the segment, come back from the last checkpoint
            i += 1
            while i < len(failures) and failures[i] < t:  # failed again while restarting
                t = failures[i] + restart_s
                i += 1
            continue
        t, done = end, done + seg
    return t


def overhead_curve(
    intervals: Sequence[float],
    *,
    cost_s: float,
    mtbf_s: float,
    restart_s: float = 0.0,
    work_s: float | None = None,
    n_traces: int = 20,
    seed: int = 0,
) -> pd.DataFrame:
    """Mean and spread of the simulated overhead for each interval, over ``n_traces`` seeded traces."""
    work_s = work_s if work_s is not None else 100 * mtbf_s
    horizon = work_s * 20
    traces = [failure_trace(mtbf_s, horizon, seed + k) for k in range(n_traces)]
    rows = []
    for iv in intervals:
        over = np.array([simulate(iv, cost_s, restart_s, work_s, tr) / work_s - 1 for tr in traces])
        rows.append(
            {
                "interval_s": float(iv),
                "overhead": over.mean(),
                "overhead_std": over.std(ddof=1) if len(over) > 1 else 0.0,
            }
        )
    return pd.DataFrame(rows)


def plot_overhead(
    curve: pd.DataFrame,
    *,
    model: Sequence[float] | None = None,
    young_s: float | None = None,
    title: str = "",
):  # noqa: ANN201 - matplotlib figure
    """Simulated overhead against the interval (log x), the analytic model beside it, Young/Daly marked."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    ax.errorbar(
        curve["interval_s"],
        100 * curve["overhead"],
        yerr=100 * curve["overhead_std"],
        fmt="o-",
        capsize=3,
        label="simulated (mean ± std over traces)",
    )
    if model is not None:
        ax.plot(curve["interval_s"], 100 * np.asarray(model), "--", label="first-order model")
    if young_s is not None:
        ax.axvline(young_s, color="gray", ls=":", label=f"Young/Daly {young_s:.0f} s")
    ax.set_xscale("log")
    ax.set_xlabel("checkpoint interval (s of work)")
    ax.set_ylabel("overhead (% of work)")
    ax.set_title(title or "How often to checkpoint")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
