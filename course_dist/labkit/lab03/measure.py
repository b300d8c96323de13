"""Lab 03's measurements: step times per configuration, the memory-collectives trade-off table and plots.

    res = course_dist.launch(lab03.time_steps, 2, args=(configs,), trace=True)
    lab03.timing_table(res)          # impl, policy, step_s, bytes_per_step, peak ... (one row per config)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pandas as pd
import torch
import torch.distributed as dist

import course_dist
from course_dist.labkit.lab03.harness import (
    BATCH,
    LR,
    WD,
    _average_,
    _import_zero_redundancy,
    _loss,
    shard_model,
)
from course_dist.labkit.lab03.ledger import MemoryLedger
from course_dist.labkit.lab03.model import make_model, wrap_policy
from course_dist.labkit.lab03.traffic import (
    bytes_moved,
    collective_counts,
    predicted_comm_s,
    record_single_collectives,
)


def _build(cfg: dict[str, Any]) -> tuple[Callable[[int], None], int]:
    """A ``step(i)`` closure for one configuration and its parameter count."""
    model = make_model(0).to(course_dist.device())
    n = sum(p.numel() for p in model.parameters())
    impl = cfg["impl"]
    if impl == "ddp":
        params = list(model.parameters())
        opt = torch.optim.AdamW(params, lr=LR, weight_decay=WD)

        def step(i: int) -> None:
            opt.zero_grad(set_to_none=True)
            _loss(model, i, BATCH, 0).backward()
            _average_(params)
            opt.step()
    elif impl == "zero1":  # the student's ShardedOptimizer reduces the gradients itself
        opt = cfg["opt_cls"](list(model.parameters()), torch.optim.AdamW, lr=LR, weight_decay=WD)

        def step(i: int) -> None:
            opt.zero_grad()
            _loss(model, i, BATCH, 0).backward()
            opt.step()
    elif impl == "zero_redundancy":  # torch's ZeRO-1 after DDP's all-reduce
        params = list(model.parameters())
        opt = _import_zero_redundancy()(params, optimizer_class=torch.optim.AdamW, lr=LR, weight_decay=WD)

        def step(i: int) -> None:
            opt.zero_grad()
            _loss(model, i, BATCH, 0).backward()
            _average_(params)
            opt.step()
    elif impl == "zero3":
        units = shard_model(model, cfg.get("policy", "block"), cfg["unit_cls"], cfg["attach"])
        opt = torch.optim.AdamW([u.shard for u in units], lr=LR, weight_decay=WD)

        def step(i: int) -> None:
            _loss(model, i, BATCH, 0).backward()
            opt.step()
            for u in units:
                u.shard.grad = None
    elif impl == "fsdp2":
        model = cfg["apply_fsdp2"](model, wrap_policy(model, cfg.get("policy", "block")),
                                   cfg.get("reshard", True)) or model
        opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WD)

        def step(i: int) -> None:
            opt.zero_grad(set_to_none=True)
            _loss(model, i, BATCH, 0).backward()
            opt.step()
    else:
        raise ValueError(f"impl must be 'ddp', 'zero1', 'zero_redundancy', 'zero3' or 'fsdp2', got {impl!r}")
    return step, n


def time_steps(configs: list[dict[str, Any]], steps: int = 5, rounds: int = 1) -> list[dict[str, Any]]:
    """Inside a rank: median seconds per step of each configuration (interleaved ``rounds`` times, so a busy
    machine slows all alike), with each one's trace window (bytes are counted from the trace afterwards)."""
    record_single_collectives()
    peaks = []
    for c in configs:  # memory first, each configuration built fresh under its own ledger (2 steps)
        with MemoryLedger() as ledger:
            step, _ = _build(c)
            step(0)
            step(1)
            peaks.append(ledger.peak)
    built = [_build(c) for c in configs]
    times: list[list[float]] = [[] for _ in configs]
    windows: list[tuple[float, float]] = [(0.0, 0.0)] * len(configs)
    for _ in range(rounds):
        for k, (step, _n) in enumerate(built):
            step(0)  # warm-up (allocations, FSDP2's lazy init)
            dist.barrier()
            t_wall = time.time()
            for i in range(1, steps + 1):
                t0 = time.perf_counter()
                step(i)
                times[k].append(time.perf_counter() - t0)
            windows[k] = (t_wall, time.time())
    rows = []
    for c, (_, n), ts, w, peak in zip(configs, built, times, windows, peaks, strict=True):
        sharded = c["impl"] in ("zero3", "fsdp2")
        rows.append({"impl": c["impl"], "policy": c.get("policy", "-") if sharded else "-",
                     "step_s": sorted(ts)[len(ts) // 2], "params": n, "window": w, "steps": steps,
                     "peak_bytes": peak})
    return rows


def timing_table(result: Any) -> pd.DataFrame:
    """The launch result of ``time_steps`` (trace=True) -> one row per configuration: the slowest rank's
    median step time, bytes moved per step per rank, collectives per step."""
    world = len(result)
    rows = []
    for k, row in enumerate(result[0]):
        step_s = max(r[k]["step_s"] for r in result)  # a synchronous step is as slow as its slowest rank
        # the last round's window holds `steps` steps
        counts = collective_counts(result.trace, 0, row["steps"], row["window"]) if result.trace is not None \
            else {}
        moved = bytes_moved(result.trace, world, 0, row["steps"], row["window"]) if result.trace is not None \
            else float("nan")
        rows.append({"impl": row["impl"], "policy": row["policy"], "world": world, "step_s": step_s,
                     "bytes_per_step": moved, "collectives_per_step": sum(counts.values()),
                     "peak_bytes": max(r[k]["peak_bytes"] for r in result), "params": row["params"]})
    return pd.DataFrame(rows)


def tradeoff_table(zero3: list[dict[str, Any]], trace: Any, world: int, fits: dict[str, tuple[float, float]],
                   steps: int) -> pd.DataFrame:
    """Per wrap policy (from ``zero3_check``'s rank-0 results and its trace): peak bytes, collectives and
    bytes per step, and the communication seconds per step that lab01's per-collective bus-byte fits
    (``fit_bus``) predict: each all-gather and reduce-scatter priced with its own fit."""
    rows = []
    for r in zero3:
        counts = collective_counts(trace, 0, steps, r["window"])
        rows.append({"policy": r["policy"], "units": r["units"], "peak_bytes": r["peak_bytes"],
                     "steady_bytes": r["steady_bytes"], "collectives_per_step": sum(counts.values()),
                     "bytes_per_step": bytes_moved(trace, world, 0, steps, r["window"]),
                     "predicted_comm_s": predicted_comm_s(trace, world, 0, steps, r["window"], fits)})
    return pd.DataFrame(rows)


def plot_tradeoff(table: pd.DataFrame, fsdp2: pd.DataFrame | None = None) -> Any:
    """Peak memory against collectives per step, one point per wrap policy (yours, and FSDP2's if given)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    ax.plot(table["collectives_per_step"], table["peak_bytes"] / 1e3, "o-", label="your ZeRO-3")
    points = zip(table["collectives_per_step"], table["peak_bytes"] / 1e3, table["policy"], strict=True)
    for x, y, p in points:
        ax.annotate(p, (x, y), textcoords="offset points", xytext=(4, 4))
    if fsdp2 is not None and len(fsdp2):
        ax.plot(fsdp2["collectives_per_step"], fsdp2["peak_bytes"] / 1e3, "s--", label="FSDP2")
    ax.set_xlabel("collectives per step")
    ax.set_ylabel("peak live bytes per rank (kB)")
    ax.set_title("wrap unit: memory vs number of collectives")
    ax.legend()
    fig.tight_layout()
    return fig
