"""Model, DDP wrapping, LR schedule and one optimizer step with gradient accumulation.

One step on one rank: ``accum`` micro-batches; all but the last run under ``model.no_sync()`` so their
gradients only accumulate locally, the last one's backward all-reduces the summed gradients, bucket by bucket,
overlapped with the rest of the backward. One all-reduce per *optimizer step* instead of one per micro-batch
is what buys the compute-per-byte this 2-core box needs (bench/bench_homework.py).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from .config import TrainConfig
from .data import SyntheticDataset


def build_model(cfg: TrainConfig) -> nn.Module:
    """An MLP ``in_dim -> hidden x depth -> classes`` with GELU and dropout, initialised from ``cfg.seed``."""
    torch.manual_seed(cfg.seed)
    layers: list[nn.Module] = []
    width = cfg.in_dim
    for _ in range(cfg.depth):
        layers += [nn.Linear(width, cfg.hidden), nn.GELU(), nn.Dropout(cfg.dropout)]
        width = cfg.hidden
    layers.append(nn.Linear(width, cfg.classes))
    return nn.Sequential(*layers)


def wrap_model(model: nn.Module, world_size: int, device: torch.device) -> nn.Module:
    """DDP when there is more than one rank (parameters are broadcast from rank 0 here); the bare model
    otherwise."""
    model.to(device)
    if world_size == 1:
        return model
    return DDP(
        model,
        device_ids=[device.index] if device.type == "cuda" else None,
        # .grad becomes a view into the all-reduce bucket: one gradient-sized copy less per step.
        gradient_as_bucket_view=True,
    )


def make_optimizer(model: nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    return torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)


def make_scheduler(
    optimizer: torch.optim.Optimizer, cfg: TrainConfig, total_steps: int
) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warm-up for ``cfg.warmup_steps``, then cosine decay to 10% of the peak over ``total_steps``."""
    warm = max(0, cfg.warmup_steps)

    def factor(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        progress = min(1.0, (step - warm) / max(1, total_steps - warm))
        return 0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


@dataclass
class StepStats:
    """Timings of one step on one rank (seconds)."""

    loss: float
    """Mean training loss over this rank's micro-batches."""
    compute_s: float
    """Forward/backward of the local micro-batches plus the optimizer step."""
    wait_s: float
    """Blocked in the pre-sync probe: waiting for the slowest rank to arrive (straggler time)."""
    sync_s: float
    """The last micro-batch: forward + backward with the gradient all-reduce overlapped."""


def train_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    data: SyntheticDataset,
    micro_batches: list[list[int]],
    device: torch.device,
    probe: Callable[[], None] | None = None,
) -> StepStats:
    """One optimizer step: ``no_sync`` accumulation, then one synchronised backward, then step the optimizer.

    ``probe`` runs just before the synchronised micro-batch (the trainer's one-scalar all-reduce that carries
    the SIGTERM flag): ranks arrive there after their local work, so the time spent in it is the time this
    rank waited for the slowest one.
    """
    accum = len(micro_batches)
    t0 = time.perf_counter()
    optimizer.zero_grad(set_to_none=True)
    total = 0.0
    wait_s = sync_s = 0.0
    for i, idx in enumerate(micro_batches):
        last = i == accum - 1
        if last and probe is not None:
            tw = time.perf_counter()
            probe()
            wait_s = time.perf_counter() - tw
        ts = time.perf_counter()
        # Gradients of the first accum-1 micro-batches stay local; the forward must run inside no_sync too.
        ctx = model.no_sync() if (isinstance(model, DDP) and not last) else nullcontext()
        with ctx:
            x, y = data.batch(idx)
            loss = F.cross_entropy(model(x.to(device)), y.to(device)) / accum  # mean over the global batch
            loss.backward()
        total += loss.item()
        if last:
            sync_s = time.perf_counter() - ts
    optimizer.step()
    scheduler.step()
    step_s = time.perf_counter() - t0
    return StepStats(loss=total, compute_s=step_s - wait_s - sync_s, wait_s=wait_s, sync_s=sync_s)


@torch.no_grad()
def eval_loss(model: nn.Module, data: SyntheticDataset, device: torch.device, n: int = 1024) -> float:
    """Loss of the unwrapped model on the first ``n`` samples (deterministic: dropout off)."""
    inner = model.module if isinstance(model, DDP) else model
    was = inner.training
    inner.eval()
    x, y = data.batch(list(range(min(n, len(data)))))
    out = F.cross_entropy(inner(x.to(device)), y.to(device)).item()
    inner.train(was)
    return out
