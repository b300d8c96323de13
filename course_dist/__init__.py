"""course_dist - run a notebook cell on N ranks of a real process group, and see inside it.

Single process (a notebook cell or a script)::

    import course_dist, torch, torch.distributed as dist

    def work():
        t = torch.ones(1) * course_dist.rank()
        dist.all_reduce(t)
        return t.item()

    course_dist.launch(work, world_size=2)          # -> [1.0, 1.0]

Under torchrun (one or many machines)::

    torchrun --nproc-per-node 2 -m course_dist.run mypkg.mymod:work

Names are imported lazily so that importing the package stays cheap (``import torch`` alone costs ~3 s).
"""

from __future__ import annotations

import importlib
from typing import Any

# public name -> submodule that defines it
_EXPORTS: dict[str, str] = {
    # launching and failure reports
    "launch": "course_dist.launch",
    "LaunchResult": "course_dist.launch",
    "RankError": "course_dist.errors",
    "LaunchTimeout": "course_dist.errors",
    # inside a rank
    "rank": "course_dist.context",
    "world_size": "course_dist.context",
    "device": "course_dist.context",
    # faults and stragglers
    "Fault": "course_dist.faults",
    "FaultInjected": "course_dist.faults",
    "step": "course_dist.faults",
    "parse_faults": "course_dist.faults",
    # determinism and grading mode
    "seed_all": "course_dist.seed",
    "pick": "course_dist.seed",
    "fast_mode": "course_dist.seed",
    # timing and pictures
    "StepTimer": "course_dist.timing",
    "gather_frames": "course_dist.timing",
    "plot_timeline": "course_dist.plots",
    "plot_scaling": "course_dist.plots",
    # collective trace
    "first_divergence": "course_dist.trace",
    "Divergence": "course_dist.trace",
    # teaching aids
    "hint": "course_dist.hints",
    "scratch_dir": "course_dist.student",
    "SolutionCard": "course_dist.card",
    "Limit": "course_dist.card",
    "check_card": "course_dist.card",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'course_dist' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def _split_run() -> None:
    """In a grading run's trusted kernel (issue 32), labkit checks called with a student's code run where
    that code lives (``course_dist.student.install``); nothing happens anywhere else."""
    import os

    if os.environ.get("COURSE_STUDENT_SOCKET"):
        from course_dist import student

        student.install()


_split_run()
