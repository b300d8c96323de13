"""Lab 04's trainer: a small model whose next step depends on *everything* a checkpoint must hold.

The trainer uses dropout (torch RNG), input jitter (numpy RNG), a random input scale (python RNG), AdamW
(optimizer moments), a cosine LR schedule (scheduler state) and an epoch-ordered sample stream (data
position), so leaving any of them out of a checkpoint changes the very next step. Never a solution.

    from course_dist.labkit import lab04
    run = lab04.uninterrupted(lab04.Config(), steps=8)      # losses and final parameters
    course_dist.launch(lab04.train, world_size=2, args=(lab04.Config(), 8))
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch import nn

import course_dist

log = logging.getLogger("course_dist.labkit.lab04.trainer")

# batches(n, world_size, rank, *, seed, epoch, consumed, batch_size) -> this rank's remaining batches of the
# epoch
BatchFn = Callable[..., list[list[int]]]


@dataclass(frozen=True)
class Config:
    """Everything that defines a training run; its hash goes into every checkpoint."""

    seed: int = 0
    """Seeds the data, the initial weights and every rank's RNG streams."""
    n_samples: int = 96
    """Samples per epoch (the data set is synthetic regression, regenerated from ``seed``)."""
    n_features: int = 16
    """Input width."""
    hidden: int = 64
    """Hidden width of the two-layer MLP."""
    dropout: float = 0.2
    """Dropout probability: makes the torch RNG part of the state."""
    batch_size: int = 12
    """Global batch: samples per step summed over all ranks."""
    lr: float = 3e-3
    """Peak learning rate of the cosine schedule (AdamW)."""
    total_steps: int = 24
    """Length of the cosine schedule, in steps."""
    jitter: float = 0.05
    """Std of the numpy input jitter: makes the numpy RNG part of the state."""
    stateless_rng: bool = False
    """If True every RNG is re-seeded from (seed, rank, step) at each step, so no RNG state needs saving
    (the counter-based trick production trainers use); exercise 1 runs with False."""

    def __post_init__(self) -> None:
        if self.n_samples <= 0 or self.batch_size <= 0 or self.total_steps <= 0:
            raise ValueError(
                f"n_samples, batch_size and total_steps must be > 0, got {self.n_samples}, "
                f"{self.batch_size}, {self.total_steps}"
            )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def digest(self) -> str:
        """Stable hash of the config (16 hex chars): a checkpoint from another config must be refused."""
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:16]


def make_data(cfg: Config) -> tuple[torch.Tensor, torch.Tensor]:
    """The synthetic regression data set ``(X, y)``, identical on every rank and every run."""
    g = torch.Generator().manual_seed(10_000 + cfg.seed)
    x = torch.randn(cfg.n_samples, cfg.n_features, generator=g)
    w = torch.randn(cfg.n_features, 1, generator=g)
    y = torch.sin(x @ w) + 0.1 * torch.randn(cfg.n_samples, 1, generator=g)
    return x, y


def epoch_order(n: int, seed: int, epoch: int) -> list[int]:
    """The epoch's global sample stream: a permutation seeded by ``seed + epoch`` (as DistributedSampler)."""
    g = torch.Generator().manual_seed(seed + epoch)
    return torch.randperm(n, generator=g).tolist()


def fixed_batches(
    n: int, world_size: int, rank: int, *, seed: int, epoch: int, consumed: int, batch_size: int
) -> list[list[int]]:
    """The *non-elastic* stream (the simple version every exercise but 4 uses).

    Needs ``n % batch_size == 0`` and ``batch_size % world_size == 0``; rank r takes the r-th contiguous block
    of each global batch. It cannot survive a world-size change that breaks these divisibilities: exercise 4
    writes the elastic one.
    """
    if n % batch_size or batch_size % world_size or consumed % batch_size:
        raise ValueError(
            "fixed_batches needs n % batch_size == 0, batch_size % world_size == 0 and "
            f"consumed % batch_size == 0; got n={n}, batch_size={batch_size}, world_size={world_size}, "
            f"consumed={consumed}. "
            f"Use an elastic sampler (exercise 4) for anything else."
        )
    order = epoch_order(n, seed, epoch)[consumed:]
    per = batch_size // world_size
    return [order[i + rank * per : i + (rank + 1) * per] for i in range(0, len(order), batch_size)]


class MLP(nn.Module):
    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(cfg.n_features, cfg.hidden),
            nn.ReLU(),
            nn.Dropout(cfg.dropout),
            nn.Linear(cfg.hidden, cfg.hidden),
            nn.ReLU(),
            nn.Dropout(cfg.dropout),
            nn.Linear(cfg.hidden, 1),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def seed_rank_rngs(seed: int, rank: int, step: int = 0) -> None:
    """Seed python, numpy and torch (CPU and CUDA) RNGs for one rank: distinct streams per rank and step."""
    s = (seed * 1_000_003 + rank * 7_919 + step * 104_729 + 1) % (2**31)
    random.seed(s)
    np.random.seed(s)
    torch.manual_seed(s)  # also seeds every CUDA device


class Trainer:
    """One rank's training loop. The attributes a checkpoint must capture are exactly these:

    - ``model``, ``optimizer`` (AdamW moments), ``scheduler`` (cosine, chainable: depends on its own step
    count)
    - ``step`` (completed steps), ``epoch`` and ``consumed`` (samples of this epoch already trained on, summed
      over all ranks)
    - the process-global RNGs: ``random``, ``numpy.random``, ``torch`` CPU and, where present, CUDA
    - ``cfg`` (a :class:`Config`; ``cfg.digest()`` is its hash)

    ``world_size``/``rank`` come from the process group if one is initialized (gradients are all-reduced),
    else 1/0. ``batches`` is the sample-stream function (default :func:`fixed_batches`).
    """

    def __init__(self, cfg: Config, *, batches: BatchFn | None = None) -> None:
        self.cfg = cfg
        self.batches = batches or fixed_batches
        self.world_size = course_dist.world_size()
        self.rank = course_dist.rank()
        self.device = course_dist.device()
        self.x, self.y = (t.to(self.device) for t in make_data(cfg))
        torch.manual_seed(cfg.seed)  # identical initial weights on every rank
        self.model = MLP(cfg).to(self.device)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr, weight_decay=0.01)
        self.scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(self.optimizer, T_max=cfg.total_steps)
        self.step = 0
        self.epoch = 0
        self.consumed = 0
        self.seen: list[int] = []  # global sample ids this rank trained on (for the elastic checks)
        seed_rank_rngs(cfg.seed, self.rank)

    def next_batch(self) -> tuple[list[int], int]:
        """This rank's indices for the next step and the global batch length (new epoch if needed)."""
        if self.consumed >= self.cfg.n_samples:
            self.epoch, self.consumed = self.epoch + 1, 0
        mine = self.batches(
            self.cfg.n_samples,
            self.world_size,
            self.rank,
            seed=self.cfg.seed,
            epoch=self.epoch,
            consumed=self.consumed,
            batch_size=self.cfg.batch_size,
        )
        glen = min(self.cfg.batch_size, self.cfg.n_samples - self.consumed)
        return (list(mine[0]) if mine else []), glen

    def train_step(self) -> float:
        """One optimizer step on the global batch; returns the global mean loss (identical on every rank)."""
        cfg = self.cfg
        if cfg.stateless_rng:
            seed_rank_rngs(cfg.seed, self.rank, self.step + 1)
        idx, glen = self.next_batch()
        self.model.train()
        x, y = self.x[idx], self.y[idx]
        jitter = np.random.normal(0.0, cfg.jitter, size=(len(idx), cfg.n_features)).astype(np.float32)
        scale = 1.0 + 0.1 * (random.random() - 0.5)
        x = (x + torch.from_numpy(jitter).to(self.device)) * scale
        # Sum over local samples / global batch length: the all-reduced SUM is then the exact global mean,
        # whatever the world size and however unevenly the batch is split (why exercise 4 stays comparable).
        loss = ((self.model(x) - y) ** 2).sum() / glen
        loss.backward()
        report = loss.detach().reshape(1)
        if self.world_size > 1:
            grads = [p.grad for p in self.model.parameters()]
            flat = torch.cat([g.reshape(-1) for g in grads] + [report])
            dist.all_reduce(flat)  # one collective per step: gradients and the loss together
            offset = 0
            for g in grads:
                g.copy_(flat[offset : offset + g.numel()].view_as(g))
                offset += g.numel()
            report = flat[-1:]
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.seen.extend(idx)
        self.step += 1
        self.consumed += glen
        return float(report.item())

    def eval_loss(self) -> float:
        """Mean squared error on the whole data set, dropout off, no jitter (no RNG consumed)."""
        self.model.eval()
        with torch.no_grad():
            return float(((self.model(self.x) - self.y) ** 2).mean().item())

    def set_position(self, step: int) -> None:
        """Derive (epoch, consumed) from the step count (valid for the fixed stream: every batch is full)."""
        per_epoch = self.cfg.n_samples // self.cfg.batch_size
        self.step, self.epoch, self.consumed = (
            step,
            step // per_epoch,
            (step % per_epoch) * self.cfg.batch_size,
        )


def params_vector(model: nn.Module) -> torch.Tensor:
    """All parameters flattened into one CPU tensor (for bitwise comparisons)."""
    return torch.cat([p.detach().reshape(-1).cpu() for p in model.parameters()])


def roundtrip(state: Any) -> Any:
    """``torch.save`` into memory and ``torch.load`` back on the CPU: proves the state is serialisable.

    ``weights_only=False`` because RNG states hold numpy arrays and Python tuples; only load files you wrote
    yourself and whose checksum you verified (exercise 2).
    """
    buf = io.BytesIO()
    torch.save(state, buf)
    buf.seek(0)
    return torch.load(buf, map_location="cpu", weights_only=False)


def scramble_rngs(seed: int = 987_654) -> None:
    """Put every global RNG somewhere unrelated (a freshly restarted process is not where the run stopped)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


@dataclass
class Run:
    losses: list[float]
    params: torch.Tensor
    eval_loss: float
    seen: list[int]


def train(cfg: Config, steps: int, *, batches: BatchFn | None = None) -> Run:
    """Train from scratch for ``steps`` steps in this process (or this rank) without interruption."""
    tr = Trainer(cfg, batches=batches)
    losses = [tr.train_step() for _ in range(steps)]
    return Run(losses, params_vector(tr.model), tr.eval_loss(), tr.seen)


_BASELINES: dict[tuple, Run] = {}


def uninterrupted(cfg: Config, steps: int) -> Run:
    """The reference run every resume is compared with (single process, cached)."""
    key = (cfg, steps)
    if key not in _BASELINES:
        _BASELINES[key] = train(cfg, steps)
    return _BASELINES[key]
