"""Stragglers (exercise 2): one rank slowed *inside* forward, per-rank compute vs wait, and rebalancing.

The slowness is a forward pre-hook that costs ``per_sample_s * factor`` per sample on the slow rank (a sleep,
so the 2 shared cores are not the bottleneck: the lesson is synchronization, not arithmetic). Because the cost
is per sample, moving samples from the slow rank to the fast ones shortens the synchronized step, and the
what-if optimum is computable: equal compute on every rank.

Each step: ``compute`` span = forward + backward (the straggler's hook is in here), ``comm`` span = one
all_reduce of the flat gradient (a fast rank's wait for the straggler lands here: a blocking collective
returns when the last rank arrives).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pandas as pd
import torch
import torch.distributed as dist
from torch import nn

DIM = 16


def global_batch(n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, DIM, generator=g)
    return x, x @ torch.linspace(-1, 1, DIM).unsqueeze(1) + 0.1 * torch.randn(n, 1, generator=g)


def make_model(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(DIM, 32), nn.Tanh(), nn.Linear(32, 1))


def reference_grad(n: int, seed: int = 0) -> torch.Tensor:
    """The balanced global-batch gradient: one process, mean loss over all ``n`` samples."""
    model = make_model(seed)
    x, y = global_batch(n, seed)
    nn.functional.mse_loss(model(x), y).backward()
    return torch.cat([p.grad.reshape(-1) for p in model.parameters()])


def _rank_fn(sizes: list[int], slow_rank: int, factor: float, steps: int, per_sample_s: float,
             loss_weight: Callable | None, seed: int) -> dict[str, Any]:
    from course_dist import StepTimer, gather_frames

    r, world = dist.get_rank(), dist.get_world_size()
    model = make_model(seed)
    cost = per_sample_s * (factor if r == slow_rank else 1.0)

    def slow_forward(module: nn.Module, inputs: tuple) -> None:
        time.sleep(cost * inputs[0].shape[0])  # per-sample cost, inside forward: what a slow GPU looks like

    model.register_forward_pre_hook(slow_forward)
    x, y = global_batch(sum(sizes), seed)
    lo = sum(sizes[:r])
    xr, yr = x[lo: lo + sizes[r]], y[lo: lo + sizes[r]]
    w = 1.0 if loss_weight is None else float(loss_weight(sizes[r], sum(sizes), world))
    timer = StepTimer()
    grad = None
    dist.barrier()  # start together: the first step's wait is the straggler's, not the launch's
    for _ in range(steps):
        with timer.compute():
            model.zero_grad()
            (w * nn.functional.mse_loss(model(xr), yr)).backward()
        with timer.comm():
            flat = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
            dist.all_reduce(flat)
        flat /= world
        grad = flat if grad is None else grad
        timer.end_step()
    spans = gather_frames(timer.frame())
    return {"spans": spans, "grad": grad}


def run(sizes: list[int], slow_rank: int = 1, factor: float = 2.0, steps: int = 6,
        per_sample_s: float = 0.004, loss_weight: Callable | None = None, seed: int = 0) -> dict[str, Any]:
    """Launch ``len(sizes)`` ranks (rank r processes ``sizes[r]`` samples of one global batch per step);
    rank ``slow_rank`` is ``factor`` x slower per sample. Returns ``{"spans": every rank's StepTimer spans,
    "grad": rank 0's averaged gradient of step 0}``."""
    from course_dist import launch

    if not sizes or min(sizes) < 1:
        raise ValueError(f"sizes must be per-rank sample counts >= 1, got {sizes!r}")
    if not 0 <= slow_rank < len(sizes):
        raise ValueError(f"slow_rank must be a rank in [0, {len(sizes)}), got {slow_rank!r}")
    res = launch(_rank_fn, len(sizes), args=(list(sizes), slow_rank, factor, steps, per_sample_s, loss_weight,
                                             seed), backend="gloo", timeout=60, stream=False)
    return res[0]


def step_times(spans: pd.DataFrame) -> pd.DataFrame:
    """Per rank: median compute and comm seconds per step, and the synchronized step (compute + comm)."""
    per = spans[spans["step"] > 0].pivot_table(index=["rank", "step"], columns="kind", values="seconds",
                                               aggfunc="sum").reset_index()
    out = per.groupby("rank")[["compute", "comm"]].median()
    out["step"] = out["compute"] + out["comm"]
    return out


def experiment(rebalance: Callable, loss_weight: Callable, world: int = 2, slow_rank: int = 1,
               factor: float = 2.0, batch: int = 24, steps: int = 6, per_sample_s: float = 0.004
               ) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Balanced run -> measure per-sample compute -> ``rebalance`` -> weighted run; the gain against the
    what-if optimum (equal compute on every rank). Returns (table, details)."""
    even = [batch // world] * world
    before = run(even, slow_rank, factor, steps, per_sample_s, loss_weight)
    t0 = step_times(before["spans"])
    sec_per_sample = [float(t0.loc[r, "compute"]) / even[r] for r in range(world)]
    sizes = [int(s) for s in rebalance(sec_per_sample, batch)]
    after = run(sizes, slow_rank, factor, steps, per_sample_s, loss_weight)
    t1 = step_times(after["spans"])
    comm_floor = float(t0["comm"].min())  # the slow rank barely waits: its comm is the transfer itself
    whatif = batch / sum(1.0 / s for s in sec_per_sample) + comm_floor
    t_before, t_after = float(t0["step"].max()), float(t1["step"].max())
    table = pd.DataFrame([
        {"run": "balanced sizes", "sizes": str(even), "step_s": t_before,
         "slow rank compute_s": float(t0.loc[slow_rank, "compute"]),
         "others' wait_s": float(t0.drop(index=slow_rank)["comm"].mean())},
        {"run": "rebalanced", "sizes": str(sizes), "step_s": t_after,
         "slow rank compute_s": float(t1.loc[slow_rank, "compute"]),
         "others' wait_s": float(t1.drop(index=slow_rank)["comm"].mean())},
        {"run": "what-if (equal compute)", "sizes": "continuous", "step_s": whatif,
         "slow rank compute_s": whatif - comm_floor, "others' wait_s": 0.0},
    ])
    gain = (t_before - t_after) / max(t_before - whatif, 1e-9)
    details = {"sizes": sizes, "sec_per_sample": sec_per_sample, "recovered": gain,
               "before": before, "after": after, "grad_ref": reference_grad(batch)}
    return table, details


def planted_spans(slow: int, world: int = 3, steps: int = 5, seed: int = 0) -> pd.DataFrame:
    """A synthetic spans frame (``rank, step, kind, seconds``): a known straggler and two planted outliers.

    Rank ``slow`` computes ~30 ms every step, the others ~10 ms (+-10 %, seeded). One fast rank has a 0.5 s
    GC pause in the middle step (its mean, max and sum of compute exceed the straggler's) and another a 0.2 s
    first step (warm-up). Comm is the wait for the slowest rank of the step (+1 ms transfer), so every rank's
    total step time is equal, as under a blocking all-reduce. Only the median compute names ``slow``.
    """
    if world < 2 or not 0 <= slow < world:
        raise ValueError(f"need world >= 2 and slow in [0, world), got world={world!r}, slow={slow!r}")
    if steps < 5:
        raise ValueError(f"steps must be >= 5 so one outlier cannot move the median, got {steps!r}")
    g = torch.Generator().manual_seed(seed)
    jitter = 1 + 0.2 * (torch.rand(world, steps, generator=g) - 0.5)
    compute = torch.where(torch.arange(world).unsqueeze(1) == slow, 0.030, 0.010) * jitter
    pause, warm = (slow + 1) % world, (slow + 2) % world if world > 2 else (slow + 1) % world
    compute[pause, steps // 2] = 0.5  # a GC pause mid-run, neither the first nor the last step
    compute[warm, 0] = 0.2  # a slow first step (warm-up)
    rows = []
    for s in range(steps):
        end = float(compute[:, s].max())
        for r in range(world):
            c = float(compute[r, s])
            rows += [{"rank": r, "step": s, "kind": "compute", "seconds": c},
                     {"rank": r, "step": s, "kind": "comm", "seconds": end - c + 0.001}]
    return pd.DataFrame(rows)
