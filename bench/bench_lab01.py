"""Lab 01 benchmark: the reference tensor-parallel block and 1F1B schedule side by side with torch's own
(``ColwiseParallel``/``RowwiseParallel`` through ``parallelize_module``, ``Schedule1F1B``), each pair timed by
the same clock, plus the alpha-beta fit's error on held-out message sizes and the measured pipeline bubble.

    python -m bench lab01            # full (a few minutes on 2 loaded cores)
    python -m bench lab01 --quick    # smoke run, numbers not for quoting

Writes ``bench/results/lab01.md`` and ``lab01.png``. The implementations are the reference solutions
themselves: the answer cells of ``solutions/lab01/lab01.py`` are executed into a namespace (the notebook stays
their only source). (The brief's naive-DP reproduction has its own page: ``python -m bench brief``.)

One clock for both sides of every ratio:
- 1F1B: the lab's executor (``lab01.run_schedule``) and torch's (``lab01.torch_schedule``) each call
  ``dist.barrier()`` once at the start of every step. ``step_clock`` wraps that barrier on each rank: a step
  is the wall clock from one barrier's return to the next barrier's call (sends waited, gradients complete),
  the same span on both sides; the first step (warm-up) and the last (no next barrier) are dropped; per step
  the slowest rank counts; a round's figure is the median over its steps.
- TP, world 1, 2, 4: ``lab01.time_tp_rank`` for both (barrier, forward + backward of one block; median after
  the first; slowest rank).
- Rounds interleave the two sides (A B A B ...); every ratio is taken per round (same load) and reported as
  min / median / max over rounds; the verdict is on the median.
Targets (issue 13): TP block <= 1.2x torch TP; 1F1B <= 1.2x torch's Schedule1F1B; alpha-beta prediction error
on held-out sizes <= 20 %; measured bubble within 0.05 of (p - 1) / (m + p - 1).
"""

from __future__ import annotations

import logging
import math
import os
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import machine, plot_curves, spread, verdict, write

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "solutions" / "lab01" / "lab01.py"
log = logging.getLogger("bench.lab01")
TARGET = 1.2


def reference(
    names: tuple[str, ...] = ("comm_solution", "tp_solution", "pipeline_solution"),
) -> dict[str, Any]:
    """Execute the named answer cells of the lab's source into one namespace and return it."""
    import torch
    import torch.distributed as dist
    from torch import nn

    from course_dist.labkit import lab01

    ns: dict[str, Any] = {
        "torch": torch,
        "dist": dist,
        "nn": nn,
        "math": math,
        "lab01": lab01,
        "__name__": "lab01_reference",
    }
    found = set()
    for cell in re.split(r"^# %%", SOURCE.read_text(encoding="utf-8"), flags=re.M):
        head, _, body = cell.partition("\n")
        m = re.search(r'"grade_id": "(\w+)"', head)
        if m and m.group(1) in names:
            exec(compile(body, f"{SOURCE}:{m.group(1)}", "exec"), ns)  # noqa: S102 - our own reference source
            found.add(m.group(1))
    missing = set(names) - found
    if missing:
        raise RuntimeError(f"answer cells {sorted(missing)} not found in {SOURCE}")
    return ns


def step_clock(fn: Callable[..., dict[str, Any]], *args: Any, **kwargs: Any) -> dict[str, Any]:
    """Rank function: run ``fn(*args, **kwargs)`` (which calls ``dist.barrier()`` once at the start of each
    step) with that barrier wrapped; return ``{"steps": [seconds per step, slowest rank], "spans": ...}``."""
    import torch
    import torch.distributed as dist

    marks: list[tuple[float, float]] = []
    orig = dist.barrier

    def barrier(*a: Any, **k: Any) -> Any:
        t_in = time.perf_counter()
        out = orig(*a, **k)
        marks.append((t_in, time.perf_counter()))
        return out

    dist.barrier = barrier  # the executors look the name up at call time
    try:
        res = fn(*args, **kwargs)
    finally:
        dist.barrier = orig
    want = kwargs["steps"]
    if len(marks) != want:
        raise ValueError(f"{fn.__name__}: expected one barrier per step ({want}), saw {len(marks)}")
    per_step = torch.tensor([marks[k + 1][0] - marks[k][1] for k in range(1, want - 1)], dtype=torch.float64)
    dist.all_reduce(per_step, op=dist.ReduceOp.MAX)  # a step lasts until its slowest rank is done
    return {"steps": per_step.tolist(), "spans": res.get("spans", [])}


def _bubble(spans: list[tuple]) -> float:
    """Idle fraction of each stage over the step's makespan, averaged over stages."""
    by_rank: dict[int, list] = {}
    for r, _step, _kind, t0, t1 in spans:
        by_rank.setdefault(r, []).append((t0, t1))
    start = min(t0 for v in by_rank.values() for t0, _ in v)
    end = max(t1 for v in by_rank.values() for _, t1 in v)
    return statistics.mean(1 - sum(t1 - t0 for t0, t1 in v) / (end - start) for v in by_rank.values())


def _row(what: str, mine: list[float], theirs: list[float], unit_ms: bool = True) -> dict[str, Any]:
    ratios = [a / b for a, b in zip(mine, theirs, strict=True)]
    med = statistics.median(ratios)
    of = statistics.median(mine) / statistics.median(theirs)
    fmt = "{:.2f}" if unit_ms else "{:.1f}"
    return {
        "what": what,
        "reference": spread([v * 1e3 for v in mine], fmt) + " ms",
        "torch": spread([v * 1e3 for v in theirs], fmt) + " ms",
        # the per-round ratios (same load) carry the verdict; the ratio of the medians is shown beside them
        "ratio": f"{spread(ratios, '{:.2f}')} (of medians {of:.2f})",
        "target": f"<= {TARGET}: {verdict(med, TARGET)}",
        "median_ratio": med,
    }


def bench_tp(ns: dict[str, Any], worlds: tuple[int, ...], rounds: int, quick: bool) -> tuple[list, dict]:
    from course_dist import launch
    from course_dist.labkit.lab01.tp import time_tp_rank

    d_model, d_hidden, batch = (256, 1024, 32) if quick else (512, 2048, 64)
    steps = 3 if quick else 8
    rows, curves = [], {"TP reference": {}, "TP torch": {}}
    for w in worlds:
        mine, theirs = [], []
        for _ in range(rounds):
            ours = (ns["ColumnParallelLinear"], ns["RowParallelLinear"])
            for classes, out in ((ours, mine), ((None, None), theirs)):
                out.append(launch(time_tp_rank, w, args=(*classes, d_model, d_hidden, batch, steps),
                                  timeout=300, stream=False)[0])
        what = f"TP block {d_model}->{d_hidden}->{d_model}, batch {batch}, world {w}"
        rows.append(_row(what, mine, theirs))
        curves["TP reference"][w], curves["TP torch"][w] = [v * 1e3 for v in mine], [v * 1e3 for v in theirs]
    return rows, curves


def bench_1f1b(ns: dict[str, Any], rounds: int, quick: bool) -> tuple[list, list[float]]:
    from course_dist import launch
    from course_dist.labkit import lab01
    from course_dist.labkit.lab01.model import ModelConfig

    # a micro-batch of 64 rows (about 10 ms of forward per stage) keeps messages and python between actions a
    # few % of a step, as the bubble formula (compute only) assumes
    cfg = ModelConfig(128, 1024, 4, 10) if quick else ModelConfig(256, 2048, 4, 10)
    m, pb = 4, 64 if quick else 256
    steps = 4 if quick else 8  # + the warm-up and the last step, both dropped by step_clock
    mine, theirs, bubbles = [], [], []
    for _ in range(rounds):
        r = launch(step_clock, 2, args=(lab01.run_schedule, ns["schedule"], "1f1b", m, pb),
                   kwargs={"cfg": cfg, "steps": steps}, timeout=300, stream=False)
        mine.append(statistics.median(r[0]["steps"]))
        per_step: dict[int, list] = {}
        for s in (s for rr in r for s in rr["spans"]):
            per_step.setdefault(s[1], []).append(s)
        bubbles += [_bubble(v) for k, v in per_step.items() if 0 < k < steps - 1]
        t = launch(step_clock, 2, args=(lab01.torch_schedule, "1f1b", m, pb),
                   kwargs={"cfg": cfg, "steps": steps}, timeout=300, stream=False)
        theirs.append(statistics.median(t[0]["steps"]))
    what = f"1F1B p=2 m={m}, {cfg.d_model}x{cfg.d_hidden} x{cfg.layers}, batch {pb}, world 2"
    rows = [_row(what, mine, theirs, unit_ms=False)]
    formula = 1 / (m + 1)
    bubble = statistics.median(bubbles)
    rows.append({
        "what": f"bubble, 1F1B p=2 m={m}, micro-batch {pb // m} (mean idle fraction of the stages' "
        f"compute spans, {len(bubbles)} steps)",
        "reference": spread(bubbles),
        "torch": "—",
        "ratio": f"formula {formula:.3f}, median off by {abs(bubble - formula):.3f}",
        "target": f"within 0.05: {'ok' if abs(bubble - formula) <= 0.05 else 'MISS'}",
    })
    return rows, bubbles


def bench_alpha_beta(ns: dict[str, Any], quick: bool) -> list[dict[str, Any]]:
    """Fit on some sizes, predict held-out ones inside the fitted range, per collective (a line fitted up to
    4 MB says nothing about 6 MB: on gloo the bandwidth drops past the caches)."""
    from course_dist.labkit import lab01

    fit_sizes = [2**k for k in range(10, 23 if not quick else 21, 2)]
    held = [3 * 2**15, 3 * 2**19] + ([] if quick else [3 * 2**20])
    meas = lab01.measure_collectives(fit_sizes + held, world=2, reps=3 if quick else 15)
    rows = []
    for coll, g in meas.groupby("collective"):
        shard = g["bytes"] // 2 if coll in ("all_gather", "reduce_scatter") else g["bytes"]
        f, h = g[~shard.isin(held)], g[shard.isin(held)]
        a, b = ns["fit_alpha_beta"](f["bytes"].tolist(), f["time_s"].tolist(), coll, 2)
        steps_, factor = lab01.ring_constants(coll, 2)
        err = lab01.relative_error([steps_ * a + factor * s * b for s in h["bytes"]], h["time_s"].tolist())
        rows.append({
            "what": f"alpha-beta {coll}, world 2: alpha {a * 1e6:.0f} us, "
            f"bus {1e-9 / b if b > 0 else math.nan:.2f} GB/s",
            "reference": f"held-out error {err:.0%}",
            "torch": "—",
            "ratio": "—",
            "target": f"<= 20 %: {'ok' if err <= 0.20 else 'MISS'}",
        })
    return rows


def main(quick: bool = False) -> dict[str, Any]:
    ns = reference()
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    rounds = 2 if quick else 5
    tp_worlds = (2,) if quick else (1, 2, 4)  # 2048 hidden units do not split over 3 ranks
    tp_rows, curves = bench_tp(ns, tp_worlds, rounds, quick)
    pp_rows, bubbles = bench_1f1b(ns, rounds, quick)
    ab_rows = bench_alpha_beta(ns, quick)
    rows = tp_rows + pp_rows + ab_rows
    load1 = os.getloadavg()[0]
    lines = [
        "# Lab 01 benchmark (tensor parallel, 1F1B, alpha-beta, bubble)",
        "",
        f"`python -m bench lab01{' --quick' if quick else ''}`; measured {machine()} (load average "
        f"{load0:.1f} before, {load1:.1f} after); {time.perf_counter() - t0:.0f} s in all. gloo, one thread "
        f"per rank. {rounds} interleaved rounds (reference, torch, reference, ...): times and ratios are "
        "min / median / max over rounds, each ratio taken within its round (the ratio of the medians in "
        "brackets); "
        "the verdict is on the median of the per-round ratios. "
        "Both sides of a ratio are timed by the same clock: 1F1B by the wall clock of a whole step on every "
        "rank (from the step's start barrier to the next one, slowest rank, first and last step dropped), TP "
        "by forward + backward of the block after a barrier (slowest rank). Collectives: fastest of "
        f"{3 if quick else 15} interleaved bursts of >= 5 ms per size. CPU/gloo figures, not GPU/NCCL ones"
        + (". **Quick run: a smoke test, not a figure to quote.**" if quick else "; the box is shared: the "
           "load average says how much."),
        "",
        "| what | reference | torch | ratio (reference / torch) | target |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| {r['what']} | {r['reference']} | {r['torch']} | {r['ratio']} | {r['target']} |"
              for r in rows]
    lines += ["", "![TP step time against world size](lab01.png)", ""]
    plot_curves("lab01", curves, ylabel="ms per forward + backward", title="TP block: reference vs torch TP")
    log.info("wrote %s", write("lab01", "\n".join(lines)))
    out = {r["what"]: r.get("median_ratio") for r in rows}
    return {"rows": rows, "ratios": out, "bubbles": bubbles}


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    main(quick="--quick" in sys.argv)
