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
    """Linear warm-up for ``cfg.warmup_steps``, then cosine decay to 10% of the peak over ``total_steps``.

    Optimizer step ``s`` (from 0) runs at ``lr * (s + 1) / W`` while ``s < W`` (``W = warmup_steps``), then at
    ``lr * (0.1 + 0.9 * (1 + cos(pi * p)) / 2)``, ``p = (s - W) / (total_steps - W)``: the floor at
    ``p = 1``."""
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


Mark = float | torch.cuda.Event
"""A point on this rank's timeline: a host time (CPU) or a recorded CUDA event (GPU)."""


class _GradClock:
    """Marks on this rank's timeline, and the mark at which the last parameter's gradient of a backward was
    accumulated (``.last``).

    ``register_post_accumulate_grad_hook`` fires as each ``.grad`` is written, before DDP's reducer *waits*
    for the bucket's all-reduce (it only launches it, asynchronously), so the last firing marks the end of
    this rank's own compute; what the backward spends after it is waiting for the others. (A probe collective
    before the last micro-batch cannot see a rank that is slow *inside* forward/backward, e.g. with
    accum 1.)

    On a CUDA device a mark is a CUDA event recorded on the current stream: a host clock read in a hook or
    after ``backward()`` returns would time the kernel *launches*, which run ahead of the GPU. Events time the
    GPU's own timeline and never block; :meth:`seconds` is read once per step, after :meth:`sync` on the
    step's last mark. On the CPU (gloo) kernels run when launched, so host ``perf_counter`` marks are exact.
    """

    def __init__(self, model: nn.Module, device: torch.device | None = None) -> None:
        self.cuda = device is not None and torch.device(device).type == "cuda"
        self.last: Mark = self.mark()
        self._handles = [
            p.register_post_accumulate_grad_hook(self._tick) for p in model.parameters() if p.requires_grad
        ]

    def mark(self) -> Mark:
        """Now, on this rank's timeline (no synchronisation)."""
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        return time.perf_counter()

    def sync(self, mark: Mark) -> None:
        """Wait until the GPU has passed ``mark`` (no-op on the CPU): the step's one synchronisation."""
        if isinstance(mark, torch.cuda.Event):
            mark.synchronize()

    def seconds(self, start: Mark, end: Mark) -> float:
        """Seconds from ``start`` to ``end`` (on CUDA, only after :meth:`sync` of ``end``)."""
        if isinstance(start, torch.cuda.Event) and isinstance(end, torch.cuda.Event):
            return start.elapsed_time(end) / 1e3  # elapsed_time is in milliseconds
        if isinstance(start, float) and isinstance(end, float):
            return end - start
        raise ValueError(f"marks of one kind expected, got {type(start).__name__} and {type(end).__name__}")

    def _tick(self, _param: torch.Tensor) -> None:
        self.last = self.mark()

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

    Timings come from ``_GradClock`` marks (CUDA events on a GPU) and the loss stays on the device until the
    end: the step synchronises once, at its last mark, not once per micro-batch (``loss.item()`` in the loop
    would stall the GPU's queue every micro-batch).
    """
    accum = len(micro_batches)
    clock = _GradClock(model, device)
    t0 = clock.mark()
    optimizer.zero_grad(set_to_none=True)
    total = torch.zeros((), device=device)
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
                grads_ready, reduced = clock.last, clock.mark()
            total += loss.detach()
    finally:
        clock.close()
    optimizer.step()
    scheduler.step()
    probe_start = clock.mark()
    if probe is not None:
        probe()  # after the gradient all-reduce the ranks are in step: this costs one latency, not a wait
    end = clock.mark()
    clock.sync(end)  # the step's one synchronisation (with a probe, its flag read has already waited)
    wait_s = clock.seconds(grads_ready, reduced) if isinstance(model, DDP) else 0.0
    sync_s = clock.seconds(probe_start, end) if probe is not None else 0.0
    step_s = clock.seconds(t0, end)
    return StepStats(loss=float(total), compute_s=step_s - wait_s - sync_s, wait_s=wait_s, sync_s=sync_s)


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
