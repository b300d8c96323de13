"""Exercise 4's support: the supervisor's report, the bitwise baseline, the progress log, torchrun entry.

- :class:`RecoveryReport` is what ``supervise`` returns; its recovery times and lost work are the student's
  to compute from ``progress.log`` (:func:`read_progress`): no helper here computes them (the judge does).
- :func:`uninterrupted_world` is the bitwise baseline; :func:`run_pickled` lets torchrun run a notebook
  function (``python -m course_dist.run course_dist.labkit.lab04.recovery:run_pickled job.pkl``).

    lab04.uninterrupted_world(lab04.Config(stateless_rng=True), steps=8, world_size=2)
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cloudpickle
import pandas as pd
import torch

import course_dist

from .simple import _baseline
from .trainer import Config


@dataclass
class RecoveryReport:
    """What a supervisor measured. ``results``: per-rank return values of the attempt that finished."""

    results: list[Any]
    attempts: int
    failures: list[str] = field(default_factory=list)  # one line per failed attempt: who died and how
    recovery_s: list[float] = field(default_factory=list)  # per restart: kill -> first resumed step done
    lost_steps: list[int] = field(
        default_factory=list
    )  # per restart: steps done before the kill - resumed step
    wall_s: float = 0.0

    @property
    def restarts(self) -> int:
        return self.attempts - 1


_WORLD_BASELINES: dict[tuple, torch.Tensor] = {}


def uninterrupted_world(cfg: Config, steps: int, world_size: int = 2, timeout: float = 60.0) -> torch.Tensor:
    """Final parameters of an uninterrupted run at ``world_size`` (cached): exercise 5's bitwise target."""
    key = (cfg, steps, world_size)
    if key not in _WORLD_BASELINES:
        _WORLD_BASELINES[key] = course_dist.launch(
            _baseline, world_size, args=(cfg, steps), timeout=timeout, stream=False
        )[0]
    return _WORLD_BASELINES[key]


def read_progress(root: str) -> pd.DataFrame:
    """The ``progress.log`` a job appends to: one ``attempt step unix_time`` line per completed step."""
    p = Path(root) / "progress.log"
    rows = [line.split() for line in p.read_text().splitlines() if line.strip()] if p.exists() else []
    return pd.DataFrame([(int(a), int(s), float(t)) for a, s, t in rows], columns=["attempt", "step", "time"])


def dump_job(path: str, fn: Any, *args: Any) -> str:
    """Pickle ``fn`` (by value, so a notebook function works) and its arguments for :func:`run_pickled`."""
    Path(path).write_bytes(cloudpickle.dumps((fn, args)))
    return path


def run_pickled(path: str) -> Any:
    """torchrun entry point: ``-m course_dist.run course_dist.labkit.lab04.recovery:run_pickled job.pkl``."""
    fn, args = cloudpickle.loads(Path(path).read_bytes())
    return fn(*args, attempt=int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") or 0))

