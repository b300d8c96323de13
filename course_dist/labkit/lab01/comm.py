"""Collective timings for the alpha-beta fit: real ones through ``course_dist.launch``, synthetic ones with a
known answer, and the ring model's constants.

The alpha-beta model of one collective of ``S`` bytes over ``N`` ranks on a ring::

    t = steps(N) * alpha + bus_factor(N) * S * beta

``steps`` is the number of sequential messages (latency terms) and ``bus_factor`` the fraction of ``S`` each
rank sends (nccl-tests' "bus bandwidth" convention: busbw = algbw * bus_factor). gloo implements some
collectives differently (reduce_scatter naively, broadcast as a tree): that is why alpha and beta are fitted
per collective and per backend, never borrowed from NCCL's ratios.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from typing import Any

import pandas as pd
import torch
import torch.distributed as dist

from course_dist.launch import launch

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "send_recv")


def ring_constants(collective: str, world: int) -> tuple[int, float]:
    """(steps, bus_factor) of ``collective`` on a ring of ``world`` ranks (the exercise's table)."""
    if collective not in COLLECTIVES:
        raise ValueError(f"collective must be one of {COLLECTIVES}, got {collective!r}")
    if not isinstance(world, int) or world < 2:
        raise ValueError(f"world must be an int >= 2 for a collective, got {world!r}")
    n = world
    return {
        "all_reduce": (2 * (n - 1), 2 * (n - 1) / n),
        "all_gather": (n - 1, (n - 1) / n),
        "reduce_scatter": (n - 1, (n - 1) / n),
        "broadcast": (1, 1.0),
        "send_recv": (1, 1.0),
    }[collective]


def synthetic(
    collective: str,
    world: int,
    alpha: float,
    beta: float,
    sizes: list[int],
    noise: float = 0.0,
    seed: int = 0,
) -> list[float]:
    """Times a perfect ring would show, times (1 + noise * N(0, 1)) multiplicative noise."""
    steps, factor = ring_constants(collective, world)
    rng = random.Random(seed)
    return [(steps * alpha + factor * s * beta) * (1 + noise * rng.gauss(0, 1)) for s in sizes]


def _op(op: str, nbytes: int) -> Callable[[], None]:
    """One blocking collective of ``nbytes`` per rank, on buffers allocated once (outside any timing)."""
    world, r = dist.get_world_size(), dist.get_rank()
    n = max(1, nbytes // 4)
    x = torch.ones(n)
    if op == "all_gather":
        out = torch.empty(n * world)
        return lambda: dist.all_gather_into_tensor(out, x)
    if op == "reduce_scatter":
        big, out = torch.ones(n * world), torch.empty(n)
        return lambda: dist.reduce_scatter_tensor(out, big)
    if op == "broadcast":
        return lambda: dist.broadcast(x, src=0)
    if op == "send_recv":

        def fn() -> None:  # rank 0 -> rank 1 (one message); others idle
            if r == 0:
                dist.send(x, 1)
            elif r == 1:
                dist.recv(x, 0)

        return fn
    return lambda: dist.all_reduce(x)


def _burst(fn: Callable[[], None], k: int) -> float:
    """Seconds per op of ``k`` back-to-back ops, all ranks starting together (barrier, not timed)."""
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(k):
        fn()
    return (time.perf_counter() - t0) / k


def _slowest(values: list[float]) -> list[float]:
    """Element-wise max over ranks: a collective is as slow as its slowest rank."""
    t = torch.tensor(values, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.tolist()


BURST_S = 5e-3  # a timed sample lasts at least this long: barrier skew and wake-up jitter average out


def _time_op(op: str, sizes: list[int], reps: int) -> list[float]:
    """Seconds per op of ``op`` at each size: the fastest of ``reps`` samples (max over ranks).

    Method: every size is warmed up (buffers, gloo's pairs) and gets a burst length ``k`` (ops per timed
    sample, the same on every rank) so that one sample lasts >= ``BURST_S``; then ``reps`` rounds each time
    every size once, in a fresh order per round, so a noisy moment of a shared machine hits all sizes alike
    instead of one size's every sample. The minimum is the estimate: noise from other processes is one-sided.
    """
    fns = [_op(op, s) for s in sizes]
    for fn in fns:  # warm-up: first uses allocate and connect
        fn()
        fn()
    one = _slowest([_burst(fn, 2) for fn in fns])
    ks = [max(1, min(64, math.ceil(BURST_S / max(t, 1e-7)))) for t in one]
    best = [math.inf] * len(sizes)
    order = list(range(len(sizes)))
    rng = random.Random(len(sizes))  # same seed on every rank: same order, so the collectives match
    for _ in range(reps):
        rng.shuffle(order)
        for i in order:
            best[i] = min(best[i], _burst(fns[i], ks[i]))
    return _slowest(best)


def _measure_rank(ops: list[str], sizes: list[int], reps: int) -> list[dict[str, Any]]:
    import warnings

    warnings.filterwarnings(
        "ignore", category=FutureWarning
    )  # *_into_tensor / *_tensor renames in torch 2.13
    world = dist.get_world_size()
    rows = []
    for op in ops:
        for s, t in zip(sizes, _time_op(op, sizes, reps), strict=True):
            # all_gather / reduce_scatter: s is the per-rank shard; S counts the full tensor, as nccl-tests do
            full = s * world if op in ("all_gather", "reduce_scatter") else s
            rows.append({"collective": op, "world": world, "bytes": full, "time_s": t})
    return rows


def measure_collectives(
    sizes: list[int],
    world: int = 2,
    ops: tuple[str, ...] = COLLECTIVES,
    reps: int = 5,
    timeout: float = 120.0,
) -> pd.DataFrame:
    """Seconds per op of each collective at each message size (max over ranks of the fastest of ``reps``
    interleaved bursts, see ``_time_op``), one launch of ``world`` ranks.

    Columns collective, world, bytes, time_s. ``bytes`` is S of the model above (all_gather / reduce_scatter:
    the full tensor, ``world`` x the per-rank shard ``size``).
    """
    res = launch(_measure_rank, world_size=world, args=(list(ops), list(sizes), reps), timeout=timeout)
    return pd.DataFrame(res[0])


def relative_error(pred: list[float], meas: list[float]) -> float:
    """Median |pred - meas| / meas (robust to one noisy point on a shared machine)."""
    import statistics

    errs = [abs(p - m) / m for p, m in zip(pred, meas, strict=True) if m > 0 and math.isfinite(p)]
    return statistics.median(errs)
