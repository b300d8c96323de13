"""Uneven inputs (Stretch A): ranks with different numbers of batches, three ways to end the epoch without a
hang, each checked against a single-process reference of what DDP *should* compute.

Semantics the references encode (torch's Join with DDP, ``divide_by_initial_world_size=True``): at step i the
ranks that still have data are active; the update is ``sum over active ranks of grad(mean loss_r) / R``. Zero
padding (a dummy batch whose loss is multiplied by 0) gives exactly that; drop_last runs ``min(counts)`` steps
with every rank active.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

BATCH, DIM, LR = 4, 6, 0.1
STRATEGIES = ("join", "drop_last", "pad")


def make_model(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)  # the same on every rank: DDP would broadcast it anyway
    return nn.Sequential(nn.Linear(DIM, 8), nn.Tanh(), nn.Linear(8, 1))


def batches(counts: list[int], rank: int, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Rank ``rank``'s ``counts[rank]`` batches (deterministic: the reference regenerates them)."""
    g = torch.Generator().manual_seed(seed * 1000 + rank)
    return [(torch.randn(BATCH, DIM, generator=g), torch.randn(BATCH, 1, generator=g))
            for _ in range(counts[rank])]


def dummy_batch() -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of the right shape for padding (its loss must be weighted by 0)."""
    return torch.zeros(BATCH, DIM), torch.zeros(BATCH, 1)


def sgd_step(model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor,
             weight: float = 1.0) -> None:
    """One step: ``weight * mse(model(x), y)`` backward (DDP averages over ranks), then ``opt.step()``."""
    opt.zero_grad(set_to_none=False)
    (weight * nn.functional.mse_loss(model(x), y)).backward()
    opt.step()


def _flat(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).clone()


def _rank_fn(run_epoch: Callable, counts: list[int], strategies: tuple[str, ...], seed: int) -> dict:
    return _rank_body(run_epoch, counts, strategies, seed)


def _rank_body(run_epoch: Callable, counts: list[int], strategies: tuple[str, ...], seed: int) -> dict:
    r = dist.get_rank()
    out = {}
    for strategy in strategies:
        model = make_model(seed)
        ddp = nn.parallel.DistributedDataParallel(model)
        opt = torch.optim.SGD(model.parameters(), lr=LR)
        steps = run_epoch(ddp, opt, batches(counts, r, seed), strategy)
        out[strategy] = {"params": _flat(model), "steps": steps}
    return out


def run_uneven(run_epoch: Callable, counts: list[int], strategies: tuple[str, ...] = STRATEGIES,
               seed: int = 0, timeout: float = 20.0) -> dict[str, list[dict]]:
    """Launch ``len(counts)`` ranks; each runs ``run_epoch(ddp, opt, its_batches, strategy)`` per strategy
    on a fresh DDP model. Returns ``{strategy: [per-rank {"params": flat tensor, "steps": value}]}``."""
    from course_dist import launch

    if not counts or min(counts) < 1:
        raise ValueError(f"counts must be a non-empty list of batch counts >= 1, got {counts!r}")
    res = launch(_rank_fn, len(counts), args=(run_epoch, list(counts), tuple(strategies), seed),
                 timeout=timeout, backend="gloo", stream=False)
    return {s: [res[r][s] for r in range(len(counts))] for s in strategies}


def reference(strategy: str, counts: list[int], seed: int = 0) -> torch.Tensor:
    """Flat parameters after the epoch, computed in one process (what DDP + the strategy must give)."""
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    world = len(counts)
    model = make_model(seed)
    data = [batches(counts, r, seed) for r in range(world)]
    n_steps = min(counts) if strategy == "drop_last" else max(counts)
    for i in range(n_steps):
        grads = [torch.zeros_like(p) for p in model.parameters()]
        for r in range(world):
            if i >= len(data[r]):
                continue  # joined / padded rank: contributes zero
            model.zero_grad()
            x, y = data[r][i]
            nn.functional.mse_loss(model(x), y).backward()
            for g, p in zip(grads, model.parameters(), strict=True):
                g += p.grad
        with torch.no_grad():
            for g, p in zip(grads, model.parameters(), strict=True):
                p -= LR * g / world  # DDP divides by the (initial) world size
    return _flat(model)


def _overhead_rank(steps: int, use_join: bool) -> float:
    from torch.distributed.algorithms import Join

    model = make_model()
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    data = batches([steps] * dist.get_world_size(), dist.get_rank())
    n = steps if dist.get_rank() == 0 else steps // 2  # rank 1 runs out half-way: Join shadows the rest
    if not use_join:
        n = steps
    dist.barrier()
    t0 = time.perf_counter()
    if use_join:
        with Join([ddp]):
            for x, y in data[:n]:
                sgd_step(ddp, opt, x, y)
    else:
        for x, y in data[:n]:
            sgd_step(ddp, opt, x, y)
    return (time.perf_counter() - t0) / steps


def join_overhead(steps: int = 40) -> dict[str, float]:
    """Seconds per step at world 2: plain DDP with equal inputs vs Join where rank 1 runs out half-way
    (rank 0's view: the shadow all-reduces and the extra 'still active?' all-reduce per step)."""
    from course_dist import launch

    plain = launch(_overhead_rank, 2, args=(steps, False), backend="gloo", stream=False)[0]
    joined = launch(_overhead_rank, 2, args=(steps, True), backend="gloo", stream=False)[0]
    return {"plain DDP s/step": plain, "Join s/step": joined, "ratio": joined / plain}


def params_close(got: Any, want: torch.Tensor, atol: float = 1e-6) -> float:
    """Max |got - want| (ValueError naming the shapes when they differ)."""
    if not isinstance(got, torch.Tensor) or got.shape != want.shape:
        raise ValueError(f"expected a tensor of shape {tuple(want.shape)}, got {got!r:.80}")
    return float((got - want).abs().max())
