"""The brief, reproduced and resolved as a controlled experiment: ``python -m bench brief`` (``--quick``).

*An eight-GPU job is slower than one GPU and loses progress on failure.* Two factors, each at two levels, on
ONE model (lab 01's: :func:`course_dist.labkit.lab01.model.model_config`, 2.10 M parameters):

- the job: lab 01's naive data-parallel step (:func:`course_dist.labkit.lab01.brief.naive_dp_rank`: one
  blocking all-reduce per parameter tensor after the whole backward) or the reference fault-tolerant trainer
  (``solutions/homework/fttrainer``: DDP's bucketed all-reduce overlapped with backward, the scheduler, the
  stop probe, metrics), its MLP replaced by lab 01's model in each rank;
- the global batch: the brief's 16 or the homework's 512, the same at world 1 and 2 (strong scaling), each
  rank taking its share in one micro-batch (no accumulation on either side).

Every cell runs at world 1 and 2, all 8 runs interleaved in every round (the order rotates). ONE throughput
definition: global samples / the median step, a step's time being the slowest rank's, steps after ``SKIP``.
Checkpoints are off in these runs on both sides. Then both jobs are SIGKILLed for real (rank 1, at a step that
moves by one every round) with a checkpoint every ``CKPT_EVERY`` steps, lab 01's interval, and the naive job
once more with none (lab 01's drill); the trainer is restarted and resumes, the steps lost are read from
what each run left on disk. CPU, gloo, one thread per rank.
"""

from __future__ import annotations

import importlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd

from bench import machine, spread, verdict, write
from bench.mdtable import md_table

REPO = Path(__file__).resolve().parents[1]
BATCHES = (16, 512)
JOBS = ("naive", "trainer")
CKPT_EVERY = 10  # lab 01's naive job checkpoints every 10 steps
SKIP = 2  # warm-up steps left out of every median


def _trainer_rank(root: str, argv: list[str], shape: tuple[int, int, int, int]) -> int:
    """One rank of the reference trainer (``<root>/fttrainer``) training lab 01's model instead of its MLP."""
    if root not in sys.path:
        sys.path.insert(0, root)
    from course_dist.labkit.lab01.model import ModelConfig, build_model

    trainer = importlib.import_module("fttrainer.trainer")
    cfg = ModelConfig(*shape)
    trainer.build_model = lambda c: build_model(cfg, seed=c.seed)  # the one thing changed: the model
    return importlib.import_module("fttrainer.train").main(argv)


def _trainer_args(cfg: Any, batch: int, world: int, steps: int, ckpt_every: int) -> list[str]:
    from course_dist.labkit.homework import cli

    return cli(in_dim=cfg.d_model, classes=cfg.classes, global_batch=batch, micro_batch=batch // world,
               data_size=batch * (steps + 1), epochs=1, max_steps=steps, ckpt_every=ckpt_every, lr=1e-3,
               warmup_steps=0, keep_last=2)


def _launch_trainer(cfg: Any, run_dir: Path, args: list[str], world: int, faults: Any = None) -> None:
    from course_dist.launch import launch

    shape = (cfg.d_model, cfg.d_hidden, cfg.layers, cfg.classes)
    argv = ["--run-dir", str(run_dir), *args]
    launch(_trainer_rank, world, args=(str(REPO / "solutions" / "homework"), argv, shape), backend="gloo",
           timeout=300, faults=faults, stream=False)


def _steps(rows: list[dict[str, Any]]) -> dict[int, dict[int, dict[str, float]]]:
    """step -> rank -> {"step", "compute", "comm"} seconds."""
    out: dict[int, dict[int, dict[str, float]]] = {}
    for r in rows:
        out.setdefault(r["k"], {})[r["rank"]] = r
    return out


def _cell(rows: list[dict[str, Any]], batch: int) -> dict[str, float]:
    """The one definition: global samples / median over steps (after SKIP) of the slowest rank's step; and
    at that rank, per step (medians): compute, and communication + waiting."""
    by_step = _steps(rows)
    slow = [max(ranks.values(), key=lambda r: r["step"]) for k, ranks in sorted(by_step.items()) if k >= SKIP]
    return {"samples/s": batch / statistics.median(r["step"] for r in slow),
            "compute ms": 1e3 * statistics.median(r["compute"] for r in slow),
            "comm+wait ms": 1e3 * statistics.median(r["comm"] for r in slow)}


def run_naive(cfg: Any, batch: int, world: int, steps: int) -> dict[str, float]:
    from course_dist.labkit.lab01.brief import naive_dp_rank
    from course_dist.launch import launch

    with tempfile.TemporaryDirectory(prefix="bench-brief-naive-") as tmp:
        res = launch(naive_dp_rank, world, args=(batch, steps, None, tmp, cfg), backend="gloo", timeout=300,
                     stream=False)
    rows = []
    for rank, out in enumerate(res):
        per = out["spans"].pivot_table(index="step", columns="kind", values="seconds", aggfunc="sum")
        for k, start, end in out["steps"]:
            rows.append({"k": k, "rank": rank, "step": end - start,
                         "compute": float(per["compute"].get(k, 0.0)),
                         "comm": float(per["comm"].get(k, 0.0)) if "comm" in per else 0.0})
    return _cell(rows, batch)


def run_trainer(cfg: Any, batch: int, world: int, steps: int, work: Path) -> dict[str, float]:
    from course_dist.labkit.homework import load_jsonl

    run_dir = work / f"tp-b{batch}-w{world}-{time.time_ns()}"
    _launch_trainer(cfg, run_dir, _trainer_args(cfg, batch, world, steps, 0), world)
    rows = [{"k": e["step"] - 1, "rank": r, "step": e["step_s"], "compute": e["compute_s"],
             "comm": e["wait_s"] + e["sync_s"]}
            for r in range(world) for e in load_jsonl(run_dir, r) if e.get("event") == "step"]
    return _cell(rows, batch)


def kill_trainer(cfg: Any, kill_step: int, work: Path, batch: int = 16) -> dict[str, Any]:
    """SIGKILL rank 1 of the trainer at ``kill_step`` (world 2, a checkpoint every CKPT_EVERY steps), restart
    it on the same run folder: the steps rank 0 had logged, the step the restart resumed from (its
    ``final.json``), their difference."""
    from course_dist.errors import RankError
    from course_dist.faults import Fault
    from course_dist.labkit.homework import checkpoint_steps, final, load_jsonl

    run_dir = work / f"kill-{kill_step}-{time.time_ns()}"
    args = _trainer_args(cfg, batch, 2, kill_step + 4, CKPT_EVERY)
    try:
        _launch_trainer(cfg, run_dir, args, 2, faults=[Fault("kill", rank=1, step=kill_step)])
        outcome = "finished (the kill did not fire)"
    except RankError as exc:
        outcome = f"rank {exc.rank}: {exc.signal_name or exc.exc_type}"
    done = max((e["step"] for e in load_jsonl(run_dir, 0) if e.get("event") == "step"), default=0)
    on_disk = checkpoint_steps(run_dir)
    _launch_trainer(cfg, run_dir, args, 2)  # the restart: a new job on the same folder, no fault
    resumed = final(run_dir)["resumed_from"] or 0
    return {"job": "trainer", "at step": kill_step, "outcome": outcome, "steps done": done,
            "checkpoints on disk": on_disk, "resumed from": resumed, "steps lost": done - resumed}


def kill_naive(cfg: Any, kill_step: int, ckpt_every: int | None) -> dict[str, Any]:
    from course_dist.labkit.lab01.brief import kill_naive_job

    k = kill_naive_job(kill_step, ckpt_every=ckpt_every, global_batch=16, cfg=cfg, steps=kill_step + 4)
    return {"job": "naive" if ckpt_every else "naive, no checkpoint", "at step": kill_step,
            "outcome": k["outcome"], "steps done": k["steps completed"], "checkpoints on disk": "-",
            "resumed from": k["resume from step"], "steps lost": k["steps lost"]}


def measure(cfg: Any, rounds: int, steps: dict[int, int]) -> dict[str, Any]:
    """``rounds`` interleaved rounds of the 8 runs, each followed by the two kills; then lab 01's drill."""
    pairs = [(j, b) for j in JOBS for b in BATCHES]
    got: dict[tuple, list[dict[str, float]]] = {(j, b, w): [] for j, b in pairs for w in (1, 2)}
    kills: list[dict[str, Any]] = []
    loads: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-brief-") as tmp:
        work = Path(tmp)
        for k in range(rounds):
            loads.append(os.getloadavg()[0])
            # a rotated order of the cells every round; world 1 and 2 of a cell back to back (their ratio is
            # taken under the same load), in alternating order
            for j, b in pairs[k % len(pairs):] + pairs[: k % len(pairs)]:
                for w in (1, 2) if k % 2 == 0 else (2, 1):
                    got[(j, b, w)].append(run_naive(cfg, b, w, steps[b]) if j == "naive"
                                          else run_trainer(cfg, b, w, steps[b], work))
            at = CKPT_EVERY + 3 + k  # lands at another point of the interval every round
            kills += [kill_naive(cfg, at, CKPT_EVERY), kill_trainer(cfg, at, work)]
        kills.append(kill_naive(cfg, 6, None))  # lab 01's drill: the same job with no checkpoint at all
    ratio = {(j, b): [r2["samples/s"] / r1["samples/s"]
                      for r1, r2 in zip(got[(j, b, 1)], got[(j, b, 2)], strict=True)] for j, b in pairs}
    return {"cells": got, "ratios": ratio, "kills": kills, "loads": loads}


def _med(m: dict[str, Any], job: str, batch: int, world: int, key: str) -> float:
    return statistics.median(c[key] for c in m["cells"][(job, batch, world)])


def _tables(m: dict[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    got, ratio = m["cells"], m["ratios"]
    rows = []
    for (j, b), rs in ratio.items():
        def col(key: str, w: int, fmt: str, j: str = j, b: int = b) -> str:
            return spread([c[key] for c in got[(j, b, w)]], fmt)
        rows.append({"job": j, "global batch": b, "samples/s world 1": col("samples/s", 1, "{:.0f}"),
                     "samples/s world 2": col("samples/s", 2, "{:.0f}"),
                     "world 2 / world 1": spread(rs, "{:.2f}"),
                     "w2 > w1": verdict(statistics.median(rs), 1.0, at_most=False),
                     "compute ms w1": col("compute ms", 1, "{:.1f}"),
                     "compute ms w2": col("compute ms", 2, "{:.1f}"),
                     "comm+wait ms w2": col("comm+wait ms", 2, "{:.1f}")})
    per_round = pd.DataFrame({"round": range(1, len(m["loads"]) + 1), "load (1 min)": m["loads"],
                              **{f"{j} {b}": [round(r, 2) for r in rs] for (j, b), rs in ratio.items()}})
    kills = pd.DataFrame(m["kills"])
    def per_kill(xs: Any) -> str:  # one value per round, in round order
        return ", ".join(str(x) for x in xs)

    cols = ("at step", "steps done", "checkpoints on disk", "resumed from", "steps lost")
    kill_rows = [{"job": name, **{c: per_kill(g[c]) for c in cols},
                  "outcome": "; ".join(sorted(set(g["outcome"])))}
                 for name, g in kills.groupby("job", sort=False)]
    return pd.DataFrame(rows), per_round, pd.DataFrame(kill_rows)


def _reading(m: dict[str, Any]) -> str:
    """Which factor resolves the brief, read off the medians (the sentences follow the figures)."""
    med = {k: statistics.median(v) for k, v in m["ratios"].items()}
    brief, batch = med[("naive", 16)], med[("naive", 512)]
    mach, both = med[("trainer", 16)], med[("trainer", 512)]
    alone = [name for name, r in (("the batch", batch), ("the machinery", mach)) if r > 1]
    if alone:
        who = " and ".join(alone) + " alone"
    elif both > 1:
        who = "neither factor alone, only the two together"
    else:
        who = "nothing in this run: no cell's median reaches world 1 (MISS), the brief is not resolved here"
    c1, c2 = _med(m, "trainer", 16, 1, "compute ms"), _med(m, "trainer", 16, 2, "compute ms")
    comm = _med(m, "trainer", 16, 2, "comm+wait ms")
    return (
        f"**Reading (medians).** The brief's cell (naive, 16) runs world 2 at {brief:.2f} of world 1. Batch "
        f"512 alone: {batch:.2f}; the trainer's machinery alone: {mach:.2f}; both: {both:.2f}. What lifts "
        f"world 2 above world 1: {who}. The batch multiplies the ratio by {batch / brief:.2f} (naive) and "
        f"{both / mach:.2f} (trainer); the machinery by {mach / brief:.2f} (batch 16) and {both / batch:.2f} "
        f"(batch 512). The machinery alone {'beats' if mach > 1 else 'does not beat'} world 1 on this 2-core "
        f"box. Why, at batch 16: the slowest rank computes {c1:.1f} ms per step at world 1 (16 samples) and "
        f"{c2:.1f} ms at world 2 on half the batch, {c2 / c1:.2f}x (ideal 0.5: two ranks and gloo's threads "
        "share the 2 cores with whatever else runs), and the all-reduce and waiting the backward did not "
        f"hide add {comm:.1f} ms. Two GPUs would not share cores: these are CPU figures, not GPU ones.")


def _kill_reading(kills: list[dict[str, Any]]) -> str:
    lost = {j: [k["steps lost"] for k in kills if k["job"] == j] for j in ("naive", "trainer")}
    worst = max(x for xs in lost.values() for x in xs)
    ok = verdict(worst, CKPT_EVERY)
    return (f"Steps lost with a checkpoint every {CKPT_EVERY}: naive {lost['naive']}, trainer "
            f"{lost['trainer']}; at most one interval on both sides: {ok}"
            + (". Losing progress is answered by the checkpoint and the restart, not by the data-parallel "
               "machinery." if ok == "ok" else "."))


def main(quick: bool = False) -> dict[str, Any]:
    from course_dist.labkit.lab01.model import build_model, model_config, n_params

    cfg = model_config()
    rounds = 1 if quick else 5
    t0, load0 = time.monotonic(), os.getloadavg()[0]
    m = measure(cfg, rounds, {16: 12 if quick else 40, 512: 6 if quick else 16})
    load1 = os.getloadavg()[0]
    table, per_round, kills = _tables(m)
    text = "\n".join([
        "# The brief, reproduced and resolved: a 2 x 2 on one model (CPU, gloo)", "",
        f"{'QUICK smoke run - not figures to quote. ' if quick else ''}Measured {machine()}; load average "
        f"(1 min) {load0:.1f} at the start, {load1:.1f} at the end; {time.monotonic() - t0:.0f} s in all; "
        f"{rounds} interleaved round(s).", "",
        f"One model in every cell: lab 01's ({n_params(build_model(cfg)):,} parameters, {cfg}). The job is "
        "lab 01's naive step (one blocking all-reduce per parameter tensor after the backward) or the "
        "reference trainer's (DDP buckets overlapped with backward; its MLP swapped for lab 01's model); "
        "the global batch is the same at world 1 and 2, in one micro-batch per rank on both sides. "
        f"Throughput, one definition for all: global batch / the median step (steps {SKIP}+), a step's time "
        "being the slowest rank's. Checkpoints off in these runs on both sides. Figures are min / median / "
        "max over the rounds; ms are per step at the slowest rank (trainer: compute_s, wait_s + sync_s from "
        "its metrics; naive: its compute and comm spans).", "",
        md_table(table, index=False), "",
        _reading(m), "",
        "World 2 / world 1 per round, with the load when the round began (world 2 needs both cores at once: "
        "read each round's ratios against the other work running then):", "",
        md_table(per_round, index=False), "",
        "**SIGKILL, measured.** World 2, batch 16, rank 1 SIGKILLed at the step shown (one step later every "
        f"round), a checkpoint every {CKPT_EVERY} steps on both sides: the trainer restarted on the same "
        "folder and resumed ('resumed from' is its final.json's); the naive job has no resume code, so its "
        "'resumed from' is the checkpoint on disk a restart would load. 'steps done' is what rank 0 had "
        "logged. The last row is lab 01's drill, the same naive job with no checkpoint: it isolates what "
        f"having no checkpoint costs (every step done). {_kill_reading(m['kills'])}", "",
        md_table(kills, index=False), "",
    ])
    write("brief", text)
    return m


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
