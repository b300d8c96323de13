"""Exercise 1's harness: does a captured state restart the *same* run (next-step equivalence)?

- :func:`check_resume` trains k steps, captures, serialises, restores into a fresh trainer whose RNGs were
  scrambled, trains m more and compares every loss and the final parameters bitwise with a run that never
  stopped.
- :func:`check_restore_twice` restores the same captured state a second time *after* the first restored
  trainer trained on: a ``restore`` that aliases the saved tensors (optimizer moments updated in place) gives
  a different second run. It also compares the state with a fingerprint taken right after the capture.

Never a solution: ``capture``/``restore`` are the student's functions, passed in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .trainer import Config, Trainer, params_vector, roundtrip, scramble_rngs, uninterrupted

CaptureFn = Callable[[Trainer], dict]
RestoreFn = Callable[[Trainer, dict], None]


@dataclass
class ResumeReport:
    k: int
    m: int
    first_bad_step: int | None
    losses: list[float]
    expected: list[float]
    params_equal: bool
    detail: str
    params: torch.Tensor = field(repr=False, default_factory=lambda: torch.zeros(0))

    @property
    def ok(self) -> bool:
        return self.first_bad_step is None and self.params_equal


def _continue(fresh: Trainer, k: int, m: int, base_losses: list[float], base_params: torch.Tensor,
              what: str) -> ResumeReport:
    losses = [fresh.train_step() for _ in range(m)]
    want = base_losses[k : k + m]
    bad = next((k + 1 + i for i, (a, b) in enumerate(zip(losses, want, strict=True)) if a != b), None)
    params = params_vector(fresh.model)
    same = torch.equal(params, base_params)
    if bad is not None:
        detail = (f"{what}: first differing step {bad}: loss {losses[bad - k - 1]!r} vs uninterrupted "
                  f"{want[bad - k - 1]!r}")
    elif not same:
        detail = f"{what}: losses equal but the final parameters differ from the uninterrupted run"
    else:
        detail = "bitwise identical"
    return ResumeReport(k, m, bad, losses, want, same, detail, params)


def check_resume(capture: CaptureFn, restore: RestoreFn, cfg: Config, k: int, m: int) -> ResumeReport:
    """Train k steps, ``capture``, serialise, restore into a fresh trainer in scrambled RNG state, train m
    more; compare steps k+1..k+m bitwise with the uninterrupted run."""
    if k < 0 or m < 1:
        raise ValueError(f"need k >= 0 and m >= 1, got k={k}, m={m}")
    base = uninterrupted(cfg, k + m)
    tr = Trainer(cfg)
    for _ in range(k):
        tr.train_step()
    state = roundtrip(capture(tr))
    del tr
    scramble_rngs()
    fresh = Trainer(cfg)
    scramble_rngs(123)
    restore(fresh, state)
    return _continue(fresh, k, m, base.losses, base.params, f"resumed at step {k}")


def fingerprint(obj: Any) -> list:
    """A small, order-stable summary of a (nested) state: every tensor's and array's float64 sum."""
    if isinstance(obj, torch.Tensor):
        return [float(obj.detach().double().sum())] if obj.is_floating_point() else [int(obj.sum())]
    if isinstance(obj, np.ndarray):
        return [float(np.asarray(obj, dtype=np.float64).sum())]
    if isinstance(obj, dict):
        return [x for key in sorted(obj, key=str) for x in fingerprint(obj[key])]
    if isinstance(obj, list | tuple):
        return [x for v in obj for x in fingerprint(v)]
    return [obj] if isinstance(obj, int | float | str | bool) or obj is None else []


@dataclass
class TwiceReport:
    first: ResumeReport
    second: ResumeReport
    state_unchanged: bool

    @property
    def ok(self) -> bool:
        return self.first.ok and self.second.ok and self.state_unchanged

    @property
    def detail(self) -> str:
        if not self.state_unchanged:
            return ("the captured state changed while the first restored trainer trained on: restore_state "
                    "must not keep references to the state's tensors (copy them)")
        return self.second.detail if self.first.ok else self.first.detail


def check_restore_twice(capture: CaptureFn, restore: RestoreFn, cfg: Config, k: int, m: int) -> TwiceReport:
    """Capture at step k; restore into trainer A, train m; restore the *same* state into trainer B, train m.
    Both must continue bitwise like the uninterrupted run, and the state must be unchanged by A's training."""
    base = uninterrupted(cfg, k + m)
    tr = Trainer(cfg)
    for _ in range(k):
        tr.train_step()
    state = roundtrip(capture(tr))
    del tr
    before = fingerprint(state)
    reports = []
    for what in ("first restore", "second restore of the same state"):
        scramble_rngs()
        fresh = Trainer(cfg)
        scramble_rngs(321)
        restore(fresh, state)
        reports.append(_continue(fresh, k, m, base.losses, base.params, what))
    return TwiceReport(reports[0], reports[1], fingerprint(state) == before)
