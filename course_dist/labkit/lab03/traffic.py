"""Bytes moved per rank, counted from the ``course_dist`` collective trace (``launch(..., trace=True)``).

Ring bandwidth terms (nccl-tests PERFORMANCE.md's bus-bandwidth factors), per rank, for a collective over
``world`` ranks of a full tensor of S bytes: all-reduce 2(N-1)/N S; all-gather and reduce-scatter (N-1)/N S;
broadcast S (what a rank must receive); the trace gives each call's shape and dtype, from which S follows.

FSDP2 calls ``dist.all_gather_single`` / ``dist.reduce_scatter_single``; ``record_single_collectives()``
(inside a rank, before the first step) makes those show in the trace too. torch's other names for them
(``all_gather_into_tensor``, ``_all_gather_base``, ``reduce_scatter_tensor``, ``_reduce_scatter_base``) are
counted as them: course_dist records them so, and frames recorded elsewhere are mapped here too.
The list forms (``all_gather``, ``reduce_scatter``) move the same bytes and are counted under their own names.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import torch.distributed as dist

from course_dist import _record

_ITEM = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "uint8": 1,
         "int8": 1, "bool": 1}
# op -> ring factor on the FULL tensor S (what a rank sends or receives per byte of S)
_FULL_FACTOR = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather_single": lambda n: (n - 1) / n,  # the trace records the input shard: S = N x shard
    "all_gather": lambda n: (n - 1) / n,  # list form: the trace records the input shard too
    "reduce_scatter_single": lambda n: (n - 1) / n,  # the trace records the full input
    "reduce_scatter": lambda n: (n - 1) / n,  # list form: the trace records the output shard
    "broadcast": lambda n: 1.0,
}
_RECORDS_SHARD = {"all_gather_single", "all_gather", "reduce_scatter"}


def _op(name: str) -> str:
    """The collective a trace row's op names (torch's aliases -> the name course_dist records)."""
    return _record.ALIASES.get(name, name)


def _numel(shape: Any) -> int:
    if shape is None:
        return 0
    if len(shape) and isinstance(shape[0], (list, tuple)):  # a list of tensors
        return sum(math.prod(s) for s in shape)
    return math.prod(shape)


def _select(trace: pd.DataFrame, rank: int, window: tuple[float, float] | None) -> pd.DataFrame:
    sub = trace[trace["rank"] == rank]
    if window is not None:  # the calls a rank issued between two wall-clock times (one phase of a launch)
        sub = sub[(sub["t_start"] >= window[0]) & (sub["t_start"] <= window[1])]
    return sub


def traffic(trace: pd.DataFrame, world: int | None = None, rank: int = 0,
            window: tuple[float, float] | None = None) -> pd.DataFrame:
    """One row per collective op of ``rank`` (within ``window``, wall-clock seconds): calls, full bytes (S
    summed) and ring bytes moved per rank."""
    world = world or trace.attrs.get("world_size") or int(trace["rank"].max()) + 1
    rows: dict[str, dict[str, float]] = {}
    for rec in _select(trace, rank, window).itertuples():
        op = _op(rec.op)
        if op not in _FULL_FACTOR:
            continue
        nbytes = _numel(rec.shape) * _ITEM.get(str(rec.dtype), 4)
        full = nbytes * world if op in _RECORDS_SHARD else nbytes
        row = rows.setdefault(op, {"op": op, "calls": 0, "full_bytes": 0.0, "ring_bytes": 0.0})
        row["calls"] += 1
        row["full_bytes"] += full
        row["ring_bytes"] += full * _FULL_FACTOR[op](world) if world > 1 else 0.0
    return pd.DataFrame(list(rows.values()), columns=["op", "calls", "full_bytes", "ring_bytes"])


def bytes_moved(trace: pd.DataFrame, world: int | None = None, rank: int = 0, steps: int = 1,
                window: tuple[float, float] | None = None) -> float:
    """Ring bytes moved per rank per step (all gradient/parameter collectives of ``rank`` in ``window``)."""
    t = traffic(trace, world, rank, window)
    return float(t["ring_bytes"].sum()) / steps if len(t) else 0.0


def collective_counts(trace: pd.DataFrame, rank: int = 0, steps: int = 1,
                      window: tuple[float, float] | None = None) -> dict[str, float]:
    """Calls per step of each collective op on ``rank`` (within ``window``)."""
    sub = _select(trace, rank, window)
    return {op: n / steps for op, n in sub.groupby(sub["op"].map(_op)).size().items()}


def record_single_collectives() -> None:
    """Inside a rank: make ``dist.all_gather_single`` / ``dist.reduce_scatter_single`` (torch 2.13's names;
    FSDP2 uses them, ``*_into_tensor``/``*_tensor`` are deprecated) appear in the course_dist trace, which
    records the ``dist.*`` calls it knows. Idempotent."""
    if not _record._installed:
        return
    for name, param in (("all_gather_single", "input_tensor"), ("reduce_scatter_single", "input")):
        if name in _record.OPS:  # course_dist records it itself: wrapping again would double the rows
            continue
        fn = getattr(dist, name, None)
        if fn is not None and not getattr(fn, "_lab03_recorded", False):
            wrapped = _record._wrap(dist, name, fn, param)
            wrapped._lab03_recorded = True  # type: ignore[attr-defined]
            setattr(dist, name, wrapped)


# lab01's names of the ring model's collectives, for the trace's op names
_COLLECTIVE = {"all_gather_single": "all_gather", "all_gather_into_tensor": "all_gather",
               "reduce_scatter_single": "reduce_scatter", "reduce_scatter_tensor": "reduce_scatter",
               "all_reduce": "all_reduce", "broadcast": "broadcast"}


def measure_fit(sizes: list[int], world: int = 2, reps: int = 5) -> pd.DataFrame:
    """From the notebook (not inside a rank): lab01's collective timings (``lab01.measure_collectives``:
    bytes = the full tensor S) of all-gather, reduce-scatter and all-reduce at ``sizes`` per rank."""
    from course_dist.labkit.lab01 import measure_collectives

    return measure_collectives(sizes, world=world, ops=("all_gather", "reduce_scatter", "all_reduce"),
                               reps=reps)


def fit_bus(meas: pd.DataFrame, world: int = 2) -> dict[str, tuple[float, float]]:
    """lab01's per-collective fit, on bus bytes: ``t = steps(N) alpha + bus_factor(N) S beta`` by least
    squares for each collective -> ``{collective: (alpha s per message, beta s per bus byte)}``. gloo
    implements each collective its own way (reduce-scatter naively): one fit per collective, never
    borrowed."""
    import numpy as np

    from course_dist.labkit.lab01 import ring_constants

    out = {}
    for coll, g in meas.groupby("collective"):
        if g["bytes"].nunique() < 2:
            raise ValueError(f"{coll}: need at least 2 distinct sizes to fit a line, got "
                             f"{g['bytes'].nunique()}")
        steps, factor = ring_constants(str(coll), world)
        x = factor * g["bytes"].to_numpy(np.float64)  # bus bytes: what each rank actually sends
        slope, intercept = np.polyfit(x, g["time_s"].to_numpy(np.float64), 1)
        out[str(coll)] = (max(float(intercept) / steps, 0.0), max(float(slope), 0.0))
    return out


def fit_table(fits: dict[str, tuple[float, float]]) -> pd.DataFrame:
    """The fits in readable units: alpha in microseconds, bus bandwidth in GB/s (1 / beta). A fit whose
    slope came out <= 0 (the time did not grow with the bytes at these sizes: noise on a shared box above
    the bytes term) has no bandwidth: NaN and a note, never ``inf`` (its predictions price alpha only)."""
    return pd.DataFrame([{"collective": c, "alpha_us": a * 1e6,
                          "bus_GB_per_s": 1e-9 / b if b > 0 else math.nan,
                          "note": "" if b > 0 else "not resolved: time did not grow with bytes; rerun"}
                         for c, (a, b) in fits.items()])


def predicted_comm_s(trace: pd.DataFrame, world: int, rank: int, steps: int,
                     window: tuple[float, float] | None, fits: dict[str, tuple[float, float]]) -> float:
    """Seconds of communication per step the fits predict for the collectives ``rank`` issued in ``window``:
    per call ``steps(N) alpha_c``, plus its bus bytes (the trace's ring bytes) times ``beta_c``, each call
    priced with its own collective's fit."""
    from course_dist.labkit.lab01 import ring_constants

    total = 0.0
    for row in traffic(trace, world, rank, window).itertuples():
        coll = _COLLECTIVE.get(row.op)
        if coll is None or coll not in fits:
            raise ValueError(f"no fit for {row.op} (fits: {sorted(fits)})")
        alpha, beta = fits[coll]
        total += row.calls * ring_constants(coll, world)[0] * alpha + row.ring_bytes * beta
    return total / steps
