"""The brief and its resolution, side by side (the report's closing cells; measured, not graded).

*An eight-GPU job is slower than one GPU and loses progress on failure.* Lab 01 reproduced it
(:mod:`course_dist.labkit.lab01.brief`): its model, a global batch of 16 split over the ranks, one blocking
all-reduce per parameter tensor, a synchronous checkpoint every 10 steps; and a SIGKILL with no checkpoint.

The resolution is a controlled 2 x 2 on ONE model, lab 01's: the job (lab 01's naive step, or the student's
trainer with its MLP swapped for lab 01's model: DDP's bucketed all-reduce overlapped with backward) x the
global batch (16 or 512, the same at world 1 and 2, one micro-batch per rank on both sides), each at world 1
and 2, interleaved over rounds, checkpoints off on both sides; ``factors`` names how much each factor moves
world 2 / world 1. Its SIGKILL figure is the recovery drill's (exercise 5): the steps redone after the
restart, against the checkpoint interval; the brief's is lab 01's drill with no checkpoint.

Both sides run on gloo on CPU here; on a GPU node the same code runs on NCCL and the factors differ. One
throughput definition: global samples per second at the median step after ``skip``, a step's time being the
slowest rank's. A shared 2-core box scatters the rounds (fast mode at load 6.7 gave naive 512 ratios of
0.41-2.43 over 2 rounds): the tables print the range and the load average.
"""

from __future__ import annotations

import os
import statistics
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd

from .procs import cli

BRIEF_BATCH = 16
RESOLVED_BATCH = 512


def _brief_rate(run: dict[str, Any], global_batch: int, skip: int) -> float:
    """Global samples/s of one naive run at its median step, a step's time being the slowest rank's: the
    definition ``resolved_numbers`` uses (the 1-in-10 checkpoint step drops out of the median, as the
    trainer's ``step_s`` leaves out its saves)."""
    per_rank = [[end - start for _, start, end in r["steps"][skip:]] for r in run["ranks"]]
    return global_batch / statistics.median(max(ts) for ts in zip(*per_rank, strict=True))


def brief_numbers(steps: int = 12, kill_step: int = 6, skip: int = 2,
                  throughput: bool = True) -> dict[str, Any]:
    """Lab 01's naive job at world 1 and 2 (``throughput=False``: not run; ``resolved_numbers`` measures it in
    its 2 x 2) and its SIGKILL without a checkpoint, measured now."""
    import course_dist

    # Resolve the lazy ``course_dist.launch`` (the function) first: lab 01's kit imports the submodule of the
    # same name, and a package attribute set by that import would otherwise shadow the function for
    # ``procs`` (its ``course_dist.launch(...)`` then calls a module).
    assert callable(course_dist.launch), f"course_dist.launch is {course_dist.launch!r}"
    from course_dist.labkit.lab01 import brief, model

    cfg = model.model_config()
    runs = (brief.reproduce_brief([1, 2], global_batch=BRIEF_BATCH, steps=steps, ckpt_every=10, cfg=cfg)
            if throughput else {})
    kill = brief.kill_without_checkpoint(kill_step, global_batch=BRIEF_BATCH, cfg=cfg)
    return {"samples_per_s": {w: _brief_rate(r, BRIEF_BATCH, skip) for w, r in runs.items()} or None,
            "steps_lost": int(kill["steps lost"]), "ckpt_every": None, "params": _lab_params(cfg), "cfg": cfg,
            "kill": kill}


def _lab_params(cfg: Any) -> int:
    from course_dist.labkit.lab01 import model

    return sum(p.numel() for p in model.build_model(cfg).parameters())


def _lab01_train_rank(name: str, root: str, argv: list[str], shape: tuple[int, int, int, int]) -> int:
    """One rank of the student's trainer on lab 01's model instead of its MLP (the one thing changed)."""
    import importlib
    import sys

    if root in sys.path:
        sys.path.remove(root)
    sys.path.insert(0, root)
    from course_dist.labkit.lab01.model import ModelConfig, build_model

    cfg = ModelConfig(*shape)
    importlib.import_module(f"{name}.trainer").build_model = lambda c: build_model(cfg, seed=c.seed)
    return importlib.import_module(f"{name}.train").main(argv)


def _naive_rate(cfg: Any, batch: int, world: int, steps: int, skip: int) -> float:
    from course_dist.labkit.lab01.brief import naive_dp_rank
    from course_dist.launch import launch

    with tempfile.TemporaryDirectory(prefix="homework-brief-naive-") as tmp:
        res = launch(naive_dp_rank, world, args=(batch, steps, None, tmp, cfg), backend="gloo", timeout=300,
                     stream=False)
    return _brief_rate({"ranks": list(res)}, batch, skip)


def _trainer_rate(pkg: ModuleType, cfg: Any, batch: int, world: int, steps: int, skip: int,
                  run_dir: Path) -> float:
    from .procs import _forked, package_root

    argv = ["--run-dir", str(run_dir), *cli(in_dim=cfg.d_model, classes=cfg.classes, global_batch=batch,
                                              micro_batch=batch // world, data_size=batch * (steps + 1),
                                              epochs=1, max_steps=steps, ckpt_every=0, warmup_steps=0)]
    shape = (cfg.d_model, cfg.d_hidden, cfg.layers, cfg.classes)
    run_dir.mkdir(parents=True, exist_ok=True)
    _forked(_lab01_train_rank, world, (pkg.__name__, str(package_root(pkg)), argv, shape), 300.0,
            [f"{pkg.__name__}.train on lab 01's model", *argv]).check()
    per_step = pkg.load_metrics(run_dir).groupby("step")["step_s"].max().sort_index().iloc[skip:]
    return batch / statistics.median(per_step.tolist())  # the slowest rank sets a synchronous step's pace


def resolved_numbers(pkg: ModuleType, cfg: Any, kill: dict[str, int], steps: int = 8, skip: int = 2,
                     rounds: int = 3, work: str | Path | None = None) -> dict[str, Any]:
    """A 2 x 2 on lab 01's model (``cfg``): job (lab 01's naive step / the student's trainer, package ``pkg``,
    its MLP swapped for that model) x global batch (16 / 512, the same at world 1 and 2, one micro-batch per
    rank), each at world 1 and 2, ``rounds`` rounds interleaved (a shared 2-core box drifts), checkpoints off
    on both sides; and the recovery drill's SIGKILL: ``kill`` = ``{"kill_step", "resumed_from",
    "ckpt_every"}`` from exercise 5. ``cells[(job, batch)]``: samples/s per round at world 1 and 2 and
    their ratios; the top level repeats the trainer at 512 (the resolution)."""
    if not {"kill_step", "resumed_from", "ckpt_every"} <= set(kill):
        raise ValueError(f"kill needs kill_step, resumed_from and ckpt_every, got {sorted(kill)}")
    root = Path(work or tempfile.mkdtemp(prefix="homework-resolution-"))
    cells: dict[tuple[str, int], dict[Any, list[float]]] = {
        (j, b): {1: [], 2: []} for j in ("naive", "trainer") for b in (BRIEF_BATCH, RESOLVED_BATCH)}
    for k in range(rounds):
        for (job, batch), got in cells.items():
            for w in (1, 2) if k % 2 == 0 else (2, 1):  # world 1 and 2 back to back, alternating order
                got[w].append(_naive_rate(cfg, batch, w, steps, skip) if job == "naive" else
                              _trainer_rate(pkg, cfg, batch, w, steps, skip, root / f"r{k}-b{batch}-w{w}"))
    for got in cells.values():
        got["ratios"] = [b / a for a, b in zip(got[1], got[2], strict=True)]
    top = cells[("trainer", RESOLVED_BATCH)]
    return {"samples_per_s": {w: statistics.median(top[w]) for w in (1, 2)}, "ratios": top["ratios"],
            "cells": cells, "steps_lost": int(kill["kill_step"]) - int(kill["resumed_from"]),
            "ckpt_every": int(kill["ckpt_every"]), "params": _lab_params(cfg)}


def factors(resolved: dict[str, Any]) -> tuple[pd.DataFrame, str]:
    """The 2 x 2 as a table (medians, ranges over rounds) and a sentence naming what moves world 2 / world
    1: the batch (16 -> 512) at each job, the machinery (naive -> trainer) at each batch (median ratios)."""
    med = {c: statistics.median(d["ratios"]) for c, d in resolved["cells"].items()}
    rows = [{"job": j, "global batch": b, "samples/s world 1": statistics.median(d[1]),
             "samples/s world 2": statistics.median(d[2]), "world 2 / world 1": med[(j, b)],
             "ratio range": f"{min(d['ratios']):.2f}-{max(d['ratios']):.2f} ({len(d['ratios'])} rounds)"}
            for (j, b), d in resolved["cells"].items()]
    lo, hi = BRIEF_BATCH, RESOLVED_BATCH
    nv, tr = (("naive", lo), ("naive", hi)), (("trainer", lo), ("trainer", hi))
    text = (f"Measured in this cell (CPU, gloo, one model, load average {os.getloadavg()[0]:.1f}): world 2 / "
            f"world 1 is {med[nv[0]]:.2f} for the brief's job. The batch ({lo} -> {hi}) multiplies it by "
            f"{med[nv[1]] / med[nv[0]]:.2f} (naive) and {med[tr[1]] / med[tr[0]]:.2f} (trainer); the "
            f"machinery (naive -> trainer) by {med[tr[0]] / med[nv[0]]:.2f} (batch {lo}) and "
            f"{med[tr[1]] / med[nv[1]]:.2f} (batch {hi}); both: {med[tr[1]]:.2f}. Two ranks share this box's "
            "cores (CPU gloo): on GPUs with NCCL the factors differ.")
    return pd.DataFrame(rows), text


def compare(brief: dict[str, Any], resolved: dict[str, Any]) -> pd.DataFrame:
    """One row per side, the same model: the brief (lab 01's naive job, batch 16: the 2 x 2's cell when
    ``brief`` has no throughput of its own) and the trainer at batch 512: throughput at world 1
    and 2, their ratio (median and range over rounds), the steps a SIGKILL cost, the interval, and the
    machine's 1-minute load average (other work on a shared 2-core box scatters the rounds)."""
    load = os.getloadavg()[0]
    if brief["samples_per_s"] is None:
        cell = resolved["cells"][("naive", BRIEF_BATCH)]
        brief = {**brief, "samples_per_s": {w: statistics.median(cell[w]) for w in (1, 2)},
                 "ratios": cell["ratios"]}
    rows = []
    for name, d, batch in (("brief: naive DP (lab 01)", brief, BRIEF_BATCH),
                           ("resolved: your trainer", resolved, RESOLVED_BATCH)):
        thr = d["samples_per_s"]
        ratios = d.get("ratios") or [thr[2] / thr[1]]
        rows.append({"job": name, "params": d["params"], "global batch": batch,
                     "samples/s world 1": thr[1], "samples/s world 2": thr[2],
                     "world 2 / world 1": statistics.median(ratios),
                     "ratio range": f"{min(ratios):.2f}-{max(ratios):.2f} ({len(ratios)} rounds)",
                     "steps lost to a SIGKILL": d["steps_lost"], "checkpoint every": d["ckpt_every"],
                     "load average": round(load, 1)})
    return pd.DataFrame(rows)
