"""Bytes moved per rank, counted from the ``course_dist`` collective trace (``launch(..., trace=True)``).

Ring bandwidth terms (anchors.md, nccl-tests PERFORMANCE.md), per rank, for a collective over ``world`` ranks
of a full tensor of S bytes: all-reduce 2(N-1)/N S; all-gather and reduce-scatter (N-1)/N S; broadcast S
(what a rank must receive); the trace gives each call's shape and dtype, from which S follows.

FSDP2 calls ``dist.all_gather_single`` / ``dist.reduce_scatter_single``; ``record_single_collectives()``
(inside a rank, before the first step) makes those show in the trace too. torch's other names for them
(``all_gather_into_tensor``, ``_all_gather_base``, ``reduce_scatter_tensor``, ``_reduce_scatter_base``) are
counted as them: course_dist records them so, and frames recorded elsewhere are mapped here too.
The list forms (``all_gather``, ``reduce_scatter``) move the same bytes and are counted under their own names.
"""

from __future__ import annotations

import math
import time
from typing import Any

import pandas as pd
import torch
import torch.distributed as dist

import course_dist
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


def time_all_gather(sizes: list[int], reps: int = 5) -> list[dict[str, float]]:
    """Inside a rank: median seconds of ``all_gather_single`` of a full float32 tensor of each size."""
    world = dist.get_world_size()
    dev = course_dist.device()
    rows = []
    for n in sizes:
        chunk = max(1, n // world)
        shard = torch.ones(chunk, device=dev)
        full = torch.empty(chunk * world, device=dev)
        dist.all_gather_single(full, shard)  # warm-up
        ts = []
        for _ in range(reps):
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_gather_single(full, shard)
            ts.append(time.perf_counter() - t0)
        rows.append({"bytes": 4 * chunk * world, "seconds": sorted(ts)[len(ts) // 2]})
    return rows


def fit_alpha_beta(rows: list[dict[str, float]]) -> tuple[float, float]:
    """Least-squares ``t = alpha + beta * bytes`` (alpha, beta clipped at >= 0)."""
    xs = [r["bytes"] for r in rows]
    ys = [r["seconds"] for r in rows]
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    var = sum((x - mx) ** 2 for x in xs)
    beta = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var if var else 0.0
    beta = max(beta, 0.0)
    alpha = max(my - beta * mx, 0.0)
    return alpha, beta
