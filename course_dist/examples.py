"""Small functions to try the package with, from a notebook or under torchrun:

    course_dist.launch(course_dist.examples.train_demo, 2, args=(20,))
    torchrun --standalone --nproc-per-node 2 -m course_dist.run course_dist.examples:train_demo 20

Both log the same final weight norm on every rank.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist

from course_dist import context
from course_dist._log import get_logger
from course_dist.faults import step
from course_dist.seed import seed_all

log = get_logger("course_dist.examples")


def allreduce_ranks() -> float:
    """Sum of all ranks (world_size * (world_size - 1) / 2) via one all_reduce: the smallest possible job."""
    t = torch.tensor([float(context.rank())])
    dist.all_reduce(t)
    return t.item()


def train_demo(steps: int | str = 10) -> float:
    """A data-parallel toy: each rank computes a gradient on its own data, all_reduce averages it, every rank
    applies the same update. ``course_dist.step(i)`` applies the fault plan (COURSE_FAULTS). Returns the final
    weight norm (identical on every rank, and across restarts: nothing is random but the seed)."""
    steps = int(steps)
    seed_all(0)
    w = torch.zeros(8)
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    me = context.rank()
    g = torch.Generator().manual_seed(1 + me)
    for i in range(steps):
        step(i)
        x = torch.randn(16, 8, generator=g)
        grad = (x @ w - 1.0) @ x / len(x)
        dist.all_reduce(grad)
        w -= 0.1 * grad / context.world_size()
    norm = float(w.norm())
    log.info("rank %d attempt %s finished %d steps, |w| = %.6f", me, attempt, steps, norm)
    return norm
