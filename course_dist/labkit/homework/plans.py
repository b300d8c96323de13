"""Fault plans of the drills: which rank dies at which step, with every class of case present at every seed.

A grading seed must only vary values *within* a class: a class drawn at random from a few values (rank 0 or
rank 1, a kill before or after the first checkpoint) leaves a wrong answer that fails one class passing on the
seeds that did not draw it (issue 27).
"""

from __future__ import annotations

import random

#: the classes of :func:`kill_plan`, in attempt order
KILL_CLASSES = ("before the first checkpoint", "right after a checkpoint", "mid-interval")


def kill_plan(rng: random.Random, ckpt_every: int = 4, steps: int = 24) -> list[tuple[int, int]]:
    """``[(rank, step)]`` of three SIGKILLs for attempts 0, 1, 2 of one world-2 job, one per class of
    :data:`KILL_CLASSES`; rank 0 and rank 1 each die at least once. ``kill:R@S`` fires before step ``S + 1``
    (``S`` steps done), so the restart resumes from ``S // ckpt_every * ckpt_every``; each kill comes after
    the previous attempt's resume point, so it fires on its attempt."""
    if ckpt_every < 2 or steps < ckpt_every + 2:
        raise ValueError(f"need ckpt_every >= 2 and steps >= ckpt_every + 2, got {ckpt_every=}, {steps=}")
    first = rng.randint(0, 1)
    before = rng.randint(1, ckpt_every - 1)  # >= 1: attempt 0 logs a step (the recovery time starts there)
    after = ckpt_every * rng.randint(1, (steps - 2) // ckpt_every)  # a checkpoint step, steps left after it
    mid = rng.choice([s for s in range(after + 1, steps) if s % ckpt_every])
    return [(first, before), (1 - first, after), (rng.randint(0, 1), mid)]
