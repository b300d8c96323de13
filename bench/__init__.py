"""Benchmarks: each ``bench/bench_<name>.py`` has ``main(quick=False)``; it writes ``results/<name>.md``.

python -m bench               # every benchmark, full repeats (minutes)
python -m bench --quick       # smoke run: tiny repeats, numbers not for quoting
python -m bench launch        # only bench_launch.py (a named run leaves BENCHMARKS.md alone)
python -m bench gpu           # bench/gpu.py, CUDA nodes only (without a GPU it says so and exits 0)

Every page goes through ``write`` (its ``commit:`` and ``measures:`` stamp, read by ``bench/check.py``) and
reports each figure as ``spread`` (min / median / max over interleaved rounds), a target as ``verdict``
('ok' or 'MISS'), and a scaling curve as ``plot_curves`` (``results/<name>.png``).
"""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def machine() -> str:
    """One line naming what the numbers were measured on (they mean nothing without it)."""
    import torch

    return (
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {os.cpu_count()} CPU cores, "
        f"load average {os.getloadavg()[0]:.1f}; Python {platform.python_version()}, "
        f"torch {torch.__version__}, "
        f"{torch.cuda.device_count()} CUDA device(s)"
    )


# What each page measures: a change to any of these paths makes its figures stale (bench/check.py).
MEASURES: dict[str, tuple[str, ...]] = {
    "checkpoint": (
        "bench/bench_checkpoint.py",
        "solutions/homework/fttrainer/checkpoint.py",
        "solutions/homework/fttrainer/durable.py",
    ),
    "collectives": ("bench/bench_collectives.py", "course_dist/launch.py", "course_dist/_worker.py"),
    "ddp": ("bench/bench_ddp.py", "solutions/lab02/lab02.py", "course_dist/labkit/lab02"),
    "gpu": ("bench/gpu.py", "course_dist", "solutions", "tests/test_course_dist_nccl.py"),
    "grading": ("bench/bench_grading.py", "autograder", "course_dist/evidence.py"),
    "grading_sandbox": ("bench/bench_grading_sandbox.py", "autograder/sandbox.py", "autograder/execute.py"),
    "homework": ("bench/bench_homework.py", "solutions/homework/fttrainer"),
    "lab01": ("bench/bench_lab01.py", "solutions/lab01/lab01.py", "course_dist/labkit/lab01"),
    "lab03": ("bench/bench_lab03.py", "solutions/lab03/lab03.py", "course_dist/labkit/lab03"),
    "lab05": ("bench/bench_lab05.py", "solutions/lab05/lab05.py", "course_dist/labkit/lab05"),
    "overlap": ("bench/bench_overlap.py", "course_dist/labkit/lab03/overlap.py"),
    "launch": (
        "bench/bench_launch.py",
        "course_dist/launch.py",
        "course_dist/_mp.py",
        "course_dist/_worker.py",
    ),
    "timeout_margin": ("bench/bench_timeout_margin.py", "course_dist/launch.py", "course_dist/_budget.py"),
    "activations": ("bench/bench_activations.py", "course_dist/labkit/lab01/activations.py"),
    "brief": (
        "bench/bench_brief.py",
        "course_dist/labkit/lab01/brief.py",
        "course_dist/labkit/lab01/model.py",
        "course_dist/labkit/homework/brief.py",
        "solutions/homework/fttrainer",
    ),
    # the reference notebooks' execution: any lab source or the machinery they run
    "course_size": ("bench/bench_course_size.py", "autograder/coursesize.py", "solutions", "course_dist"),
    "dcp": ("bench/bench_dcp.py", "course_dist/labkit/lab04/sharded.py",
            "course_dist/labkit/lab04/dcpstall.py"),
    "hang_tools": ("bench/bench_hang_tools.py", "course_dist/labkit/lab05/hang_tools.py",
                   "course_dist/labkit/lab05/hangs.py"),
    "live_recovery": ("bench/bench_live_recovery.py",),
}


def stamp(name: str) -> str:
    """The two lines ``bench/check.py`` reads: the commit measured (HEAD; uncommitted changes to the measured
    paths are noted, and make the page stale) and the paths."""
    import subprocess

    root = RESULTS.parents[1]
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True
    ).stdout.strip()
    paths = MEASURES.get(name, (f"bench/bench_{name}.py",))
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", *paths], cwd=root, capture_output=True, text=True
    ).stdout.strip()
    note = " (with uncommitted changes to the measured paths: not a figure to quote)" if dirty else ""
    return f"commit: {head}{note}\nmeasures: {' '.join(paths)}\n"


def write(name: str, text: str) -> Path:
    """Write ``results/<name>.md`` with its commit and measured paths after the title line."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.md"
    title, _, rest = text.partition("\n")
    path.write_text(f"{title}\n\n{stamp(name)}{rest}")
    return path


def spread(values: list[float], fmt: str = "{:.3f}") -> str:
    """'min / median / max' of ``values`` (what every figure on a page is reported as)."""
    import statistics

    if not values:
        raise ValueError(f"spread of no values: {values!r}")
    return " / ".join(fmt.format(v) for v in (min(values), statistics.median(values), max(values)))


def verdict(ratio: float, target: float, *, at_most: bool = True) -> str:
    """'ok' or 'MISS' for a median ratio against its target (a miss is printed as one, never hidden)."""
    ok = ratio <= target if at_most else ratio >= target
    return "ok" if ok else "MISS"


def plot_curves(name: str, curves: dict[str, dict[int, list[float]]], *, ylabel: str, title: str,
                logy: bool = False) -> Path:
    """Write ``results/<name>.png``: one line per contender, median over rounds with a min-max band, against
    the world size. ``curves[label][world] = [value per round]``."""
    import statistics

    import matplotlib

    matplotlib.use("Agg")  # a bench runs headless
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    for label, by_world in curves.items():
        worlds = sorted(w for w, v in by_world.items() if v)
        med = [statistics.median(by_world[w]) for w in worlds]
        ax.plot(worlds, med, "o-", label=label)
        ax.fill_between(worlds, [min(by_world[w]) for w in worlds], [max(by_world[w]) for w in worlds],
                        alpha=0.2)
    ax.set(xlabel="world size (ranks)", ylabel=ylabel, title=title)
    ax.set_xticks(sorted({w for c in curves.values() for w in c}))
    if logy:
        ax.set_yscale("log")
    ax.legend(fontsize=8)
    fig.tight_layout()
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
