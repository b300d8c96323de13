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
    """AdamW (the default) or plain SGD (``cfg.optimizer == "sgd"``: the drills' choice, since AdamW divides
    a gradient by its own running magnitude and so hides a constant mistake in its scale)."""
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
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
    """Local work: forward/backward of every micro-batch up to this rank's last gradient, plus the
    optimizer."""
    wait_s: float
    """From this rank's last gradient being ready to the averaged gradients being there: waiting for the
    slowest rank plus the part of the all-reduce that did not hide behind the backward."""
    sync_s: float
    """The ``probe`` after the optimizer step (the trainer's one-scalar all-reduce carrying the SIGTERM
    flag)."""


class _GradClock:
    """Time at which the last parameter's gradient of a backward was accumulated on this rank.

    ``register_post_accumulate_grad_hook`` fires as each ``.grad`` is written, before DDP's reducer *waits*
    for the bucket's all-reduce (it only launches it, asynchronously), so the last firing marks the end
    of this
    rank's own compute; what the backward spends after it is waiting for the others. (A probe collective
    before the last micro-batch cannot see a rank that is slow *inside* forward/backward, e.g. with
    accum 1.)"""

    def __init__(self, model: nn.Module) -> None:
        self.last = 0.0
        self._handles = [
            p.register_post_accumulate_grad_hook(self._tick) for p in model.parameters() if p.requires_grad
        ]

    def _tick(self, _param: torch.Tensor) -> None:
        self.last = time.perf_counter()

    def close(self) -> None:
        for h in self._handles:
            h.remove()


def train_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    data: SyntheticDataset,
    micro_batches: list[list[int]],
    device: torch.device,
    probe: Callable[[], None] | None = None,
) -> StepStats:
    """One optimizer step: ``no_sync`` accumulation, one synchronised backward, the optimizer, then ``probe``.

    Each micro-batch's loss is divided by ``accum`` so the summed gradient is the mean over this rank's share;
    DDP averages over ranks: the result is the gradient of the mean loss over the global batch.
    """
    accum = len(micro_batches)
    t0 = time.perf_counter()
    optimizer.zero_grad(set_to_none=True)
    total = 0.0
    clock = _GradClock(model)
    try:
        for i, idx in enumerate(micro_batches):
            last = i == accum - 1
            # Gradients of the first accum-1 micro-batches stay local; the forward must run inside
            # no_sync too.
            ctx = model.no_sync() if (isinstance(model, DDP) and not last) else nullcontext()
            with ctx:
                x, y = data.batch(idx)
                loss = (
                    F.cross_entropy(model(x.to(device)), y.to(device)) / accum
                )  # mean over the global batch
                loss.backward()
            if last:
                wait_s = time.perf_counter() - clock.last if isinstance(model, DDP) else 0.0
            total += loss.item()
    finally:
        clock.close()
    optimizer.step()
    scheduler.step()
    sync_s = 0.0
    if probe is not None:
        ts = time.perf_counter()
        probe()  # after the gradient all-reduce the ranks are in step: this costs one latency, not a wait
        sync_s = time.perf_counter() - ts
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
