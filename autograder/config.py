"""Where the course lives and how grading runs: one dataclass shared by release, grade and course.

Every path defaults to the repository layout of DESIGN.md; tests point the same code at a fixture course by
building a ``CourseConfig(root=...)`` for a temporary copy. Numbers are validated here so that a bad flag
fails with the value received, before any notebook runs.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from course_dist.seed import FAST_VAR

REPO_ROOT = Path(__file__).resolve().parents[1]


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise ValueError(f"{name}={raw!r} is not a number of seconds") from exc


@dataclass(frozen=True)
class CourseConfig:
    """Paths and grading limits of one course tree.

    Attributes:
        root: repository root; every relative path below is resolved against it.
        solutions: ``solutions/<lab>/<lab>.py`` sources (the only hand-edited lab files).
        labs: student release written by ``release`` (generated, never hand-edited).
        rubric: ``rubric/<lab>.yaml`` per lab.
        mutants: ``mutants/<lab>/<name>.py`` known-wrong answers.
        build: scratch and results; the nbgrader course directory is ``build/nbgrader``.
        workers: submissions graded in parallel (each in its own process session).
        cell_timeout: seconds one cell may run before nbgrader interrupts it. Sized for distributed cells:
            a launch in fast mode takes seconds, a launcher-side timeout is ~60 s, so the cell limit sits
            above the launcher's so the launcher's diagnosis (stacks per rank) is what the student sees.
        notebook_timeout: wall-clock cap for one whole submission (autograde + feedback). On expiry the
            submission's entire process tree (kernel, ranks, grandchildren) is killed and the row says why.
        fast: run grading kernels with ``COURSE_FAST=1`` (small sizes; DESIGN.md "fast grading mode").
        kernel_env: extra environment variables for grading kernels.
        stderr_fails: nbgrader's default scores a test cell 0 when it writes anything to stderr. Distributed
            cells print harmless warnings there (torch/c10d, streamed rank stderr), so by default a test cell
            fails if and only if it raises; set True for nbgrader's stricter rule.
    """

    root: Path = REPO_ROOT
    solutions: Path = Path("solutions")
    labs: Path = Path("labs")
    rubric: Path = Path("autograder/rubric")
    mutants: Path = Path("autograder/mutants")
    build: Path = Path("build")
    workers: int = 2
    cell_timeout: float = field(default_factory=lambda: _env_float("COURSE_CELL_TIMEOUT", 240.0))
    notebook_timeout: float = field(default_factory=lambda: _env_float("COURSE_NOTEBOOK_TIMEOUT", 900.0))
    fast: bool = True
    kernel_env: tuple[tuple[str, str], ...] = ()
    stderr_fails: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root).resolve())
        for name in ("solutions", "labs", "rubric", "mutants", "build"):
            p = Path(getattr(self, name))
            object.__setattr__(self, name, p if p.is_absolute() else self.root / p)
        if not isinstance(self.workers, int) or self.workers < 1:
            raise ValueError(f"workers must be a positive integer, got {self.workers!r}")
        for name in ("cell_timeout", "notebook_timeout"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise ValueError(f"{name} must be a positive number of seconds, got {v!r}")
        if self.notebook_timeout < self.cell_timeout:
            raise ValueError(
                f"notebook_timeout ({self.notebook_timeout}) must be >= cell_timeout ({self.cell_timeout}): "
                "the per-submission cap would fire before the per-cell one"
            )

    # ---- derived paths -------------------------------------------------------------------------
    @property
    def nbgrader_root(self) -> Path:
        return self.build / "nbgrader"

    @property
    def gradebook(self) -> Path:
        return self.nbgrader_root / "gradebook.db"

    def with_(self, **changes: object) -> CourseConfig:
        return replace(self, **changes)

    def kernel_environ(self) -> dict[str, str]:
        """Environment for grading kernels (inherited by every rank they launch)."""
        # The per-cell limit the executors give nbclient (``int(cell_timeout)``): course_dist.launch shortens
        # its own timeout to what the cell has left, so a hang is reported by the launcher (LaunchTimeout
        # naming the stuck rank), not cut short by the interrupt (KeyboardInterrupt).
        env = {FAST_VAR: "1" if self.fast else "0", "COURSE_CELL_TIMEOUT_S": str(int(self.cell_timeout))}
        env.update(dict(self.kernel_env))
        return env

    def lab_ids(self) -> list[str]:
        """Labs that have a notebook source: ``solutions/<lab>/<lab>.py`` in jupytext percent format."""
        from autograder.source import is_notebook_source

        if not self.solutions.is_dir():
            return []
        return sorted(
            d.name for d in self.solutions.iterdir() if d.is_dir() and is_notebook_source(d / f"{d.name}.py")
        )
