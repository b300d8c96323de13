"""The brief, reproduced on real process groups: a naive data-parallel job that is slower at world 2 than at
world 1, where its time goes per rank, and the progress a SIGKILL costs without a checkpoint.

The naive step (what a first attempt at "use more GPUs" looks like): the lab model, the same *global* batch
at every world size split over the ranks (a small per-rank batch), forward and backward, then one blocking
``all_reduce`` per parameter tensor (no bucketing, no overlap with backward), the optimizer, and a
synchronous checkpoint written by rank 0 every ``ckpt_every`` steps while the others run ahead into the next
collective and wait there.

- ``naive_dp_rank``: the loop on one rank, timed with ``course_dist.StepTimer``;
- ``reproduce_brief``: one ``launch(..., trace=True)`` per world size (gloo on CPU, NCCL on GPUs: the same
  code); returns the per-rank spans, the per-step clocks and the collective trace;
- ``brief_table``: per world and rank, seconds per step of compute, transfer, waiting, checkpoint and other,
  and throughput; waiting and transfer split from the trace by the student's ``split_wait``;
- ``kill_naive_job``: SIGKILL rank 1 mid-run; the steps lost, measured from the progress each rank wrote and
  the checkpoint on disk (``kill_without_checkpoint``: the same with no checkpoint, a restart begins at 0);
- ``plot_brief``: the decomposition as stacked bars, and throughput per world size.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from statistics import median
from typing import Any

import pandas as pd
import torch
import torch.distributed as dist
from torch import nn

from course_dist.labkit.lab01.model import ModelConfig, build_model, make_data, model_config

KINDS = ["compute", "transfer", "wait", "checkpoint", "other"]


def _write(path: str, text: str) -> None:
    """Overwrite ``path`` with raw os calls: survives a SIGKILL of the writer right after it returns."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def naive_dp_rank(
    global_batch: int, steps: int, ckpt_every: int | None, out_dir: str, cfg: ModelConfig | None = None
) -> dict[str, Any]:
    """One rank of the naive job. Writes ``progress.<rank>`` (steps completed) after every step and, on
    rank 0, ``ckpt.pt`` + ``ckpt_step`` every ``ckpt_every`` steps (None: never). Returns the timer's spans
    and per-step clocks."""
    import course_dist

    world, rank = dist.get_world_size(), dist.get_rank()
    if global_batch % world:
        raise ValueError(f"global batch {global_batch} does not split over {world} ranks")
    cfg = cfg or model_config()
    local = global_batch // world  # the same global batch at every world size: the per-rank batch shrinks
    model = build_model(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x_all, y_all = make_data(global_batch * 8, cfg)
    timer = course_dist.StepTimer()
    # progress: overwritten in place (pwrite, fixed width), survives a SIGKILL; a truncating rewrite cost
    # ~8 ms per step on this machine's disk, which would have shown up as "other" time
    progress = os.open(os.path.join(out_dir, f"progress.{rank}"), os.O_WRONLY | os.O_CREAT, 0o600)
    os.pwrite(progress, f"{0:>12d} {time.time():>24.6f}\n".encode(), 0)  # started: 0 steps, this time
    _write(os.path.join(out_dir, f"started.{rank}"), repr(time.time()))
    for i in range(steps):
        course_dist.step(i)  # the fault plan (a SIGKILL) fires here
        j = (i % 8) * global_batch + rank * local
        with timer.compute():
            loss = nn.functional.cross_entropy(model(x_all[j : j + local]), y_all[j : j + local])
            loss.backward()
        if world > 1:
            with timer.comm():  # one blocking all-reduce per parameter tensor: one latency each
                for p in model.parameters():
                    dist.all_reduce(p.grad)
                    p.grad /= world
        with timer.compute():
            opt.step()
            opt.zero_grad(set_to_none=True)
        if ckpt_every and (i + 1) % ckpt_every == 0 and rank == 0:
            with timer.span("checkpoint"):  # synchronous: nobody trains while it writes, the others wait
                tmp = os.path.join(out_dir, "ckpt.pt.tmp")
                torch.save({"model": model.state_dict(), "optim": opt.state_dict(), "step": i + 1}, tmp)
                os.replace(tmp, os.path.join(out_dir, "ckpt.pt"))
                _write(os.path.join(out_dir, "ckpt_step"), str(i + 1))
        os.pwrite(progress, f"{i + 1:>12d} {time.time():>24.6f}\n".encode(), 0)
        timer.end_step()
    os.close(progress)
    return {"spans": timer.frame(), "steps": timer.steps, "loss": float(loss.detach())}


def reproduce_brief(
    worlds: list[int],
    *,
    global_batch: int = 16,
    steps: int = 40,
    ckpt_every: int | None = 10,
    cfg: ModelConfig | None = None,
    timeout: float = 120.0,
) -> dict[int, dict[str, Any]]:
    """Run the naive job at each world size (one ``launch(..., trace=True)`` each): world -> {"ranks": each
    rank's return, "trace": the collective trace, "elapsed": launch seconds}."""
    from course_dist.launch import launch

    runs = {}
    for w in worlds:
        with tempfile.TemporaryDirectory(prefix=f"lab01-brief-w{w}-") as tmp:
            res = launch(
                naive_dp_rank,
                world_size=w,
                args=(global_batch, steps, ckpt_every, tmp, cfg),
                trace=True,
                timeout=timeout,
                stream=False,
            )
        runs[w] = {"ranks": list(res), "trace": res.trace, "elapsed": res.elapsed}
    return runs


def brief_table(
    runs: dict[int, dict[str, Any]],
    split_wait: Callable[[pd.DataFrame], pd.DataFrame],
    *,
    global_batch: int = 16,
    warmup: int = 2,
) -> pd.DataFrame:
    """Per world and rank: milliseconds per step of compute, transfer, wait, checkpoint and other (means over
    the steps after ``warmup``), and the world's throughput (global samples per second at rank 0's median
    step)."""
    rows = []
    for w, run in sorted(runs.items()):
        calls = run["trace"]
        if calls is not None and len(calls):
            calls = split_wait(
                calls[calls["op"] == "all_reduce"][["rank", "group", "seq", "t_start", "t_end"]]
            )
        for r, out in enumerate(run["ranks"]):
            steps = out["steps"][warmup:]
            t0, t1 = steps[0][1], steps[-1][2]  # the timed window on this rank's clock
            spans = out["spans"]
            spans = spans[(spans["start"] >= t0) & (spans["end"] <= t1)]
            per = spans.groupby("kind")["seconds"].sum()
            if w > 1:
                mine = calls[(calls["rank"] == r) & (calls["t_start"] >= t0) & (calls["t_end"] <= t1)]
                wait, transfer = float(mine["wait_s"].sum()), float(mine["transfer_s"].sum())
            else:
                wait = transfer = 0.0
            n = len(steps)
            # the rate at the median step, not the window's mean: a step preempted by another process on a
            # busy box moves a mean (world 1's never-blocking process is preempted most), not a median
            typical = median(end - start for _, start, end in steps)
            row = {
                "world": w,
                "rank": r,
                "compute": per.get("compute", 0.0),
                "transfer": transfer,
                "wait": wait,
                "checkpoint": per.get("checkpoint", 0.0),
            }
            row["other"] = max((t1 - t0) - sum(row[k] for k in KINDS[:4]), 0.0)
            rows.append(
                {
                    **{k: v for k, v in row.items() if k in ("world", "rank")},
                    **{f"{k} (ms/step)": row[k] / n * 1e3 for k in KINDS},
                    "step (ms)": (t1 - t0) / n * 1e3,
                    "samples/s": global_batch / typical if r == 0 else float("nan"),
                }
            )
    df = pd.DataFrame(rows)
    df["samples/s"] = df.groupby("world")["samples/s"].transform("first")  # the job's rate, on every row
    return df


def throughput(table: pd.DataFrame) -> dict[int, float]:
    """world -> global samples per second (from ``brief_table``)."""
    return {int(w): float(v) for w, v in table.groupby("world")["samples/s"].first().items()}


def kill_without_checkpoint(kill_step: int = 6, **kw: Any) -> dict[str, Any]:
    """``kill_naive_job`` with no checkpoint: a restart begins again at step 0, so every step done is lost."""
    return kill_naive_job(kill_step, ckpt_every=None, **kw)


def kill_naive_job(
    kill_step: int = 6,
    *,
    ckpt_every: int | None = None,
    world: int = 2,
    global_batch: int = 16,
    steps: int = 1000,
    cfg: ModelConfig | None = None,
    timeout: float = 120.0,
) -> dict[str, Any]:
    """SIGKILL rank 1 at ``kill_step`` of the naive job (a checkpoint every ``ckpt_every`` steps; None: none):
    the steps each rank had completed (read from its progress file), the step a restart would resume from
    (the checkpoint on disk, else 0), and the steps and seconds lost (seconds from the first rank's start of
    training to the last progress written: what a restart from step 0 redoes)."""
    from course_dist import Fault, RankError
    from course_dist.launch import launch

    with tempfile.TemporaryDirectory(prefix="lab01-brief-kill-") as tmp:
        try:
            launch(
                naive_dp_rank,
                world_size=world,
                args=(global_batch, steps, ckpt_every, tmp, cfg),
                faults=[Fault("kill", rank=1, step=kill_step)],
                timeout=timeout,
                stream=False,
            )
            outcome, named = "finished (unexpected)", None
        except RankError as exc:
            outcome, named = f"RankError: {exc.signal_name or exc.exc_type}", exc.rank
        done, t_last, t_first = [], 0.0, float("inf")
        for r in range(world):
            try:
                with open(os.path.join(tmp, f"started.{r}")) as f:
                    t_first = min(t_first, float(f.read()))
            except (OSError, ValueError):
                pass
            try:
                with open(os.path.join(tmp, f"progress.{r}")) as f:
                    n, t = f.read().split()
                done.append(int(n))
                t_last = max(t_last, float(t))
            except (OSError, ValueError):
                done.append(0)
        try:
            with open(os.path.join(tmp, "ckpt_step")) as f:
                resume = int(f.read())
        except OSError:
            resume = 0  # no checkpoint: a restart begins again at step 0
    return {
        "killed rank": 1,
        "at step": kill_step,
        "checkpoint every": ckpt_every,
        "reported rank": named,
        "outcome": outcome,
        "steps completed": max(done),
        "resume from step": resume,
        "steps lost": max(done) - resume,
        "seconds of training lost": t_last - t_first if t_first < float("inf") else float("nan"),
    }


def plot_brief(table: pd.DataFrame, ax: Any = None) -> Any:
    """Stacked ms per step by kind for every (world, rank), and global samples/s per world size."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(
            1, 2, figsize=(11, 3.5), gridspec_kw={"width_ratios": [2, 1]}, layout="constrained"
        )
    labels = [f"world {w}\nrank {r}" for w, r in zip(table["world"], table["rank"], strict=True)]
    bottom = [0.0] * len(table)
    for k in KINDS:
        vals = table[f"{k} (ms/step)"].tolist()
        ax[0].bar(labels, vals, bottom=bottom, label=k)
        bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
    ax[0].set_ylabel("ms per step")
    ax[0].set_title("naive DP, same global batch: each rank's step (measured, CPU/gloo)", fontsize="medium")
    ax[0].legend(fontsize="small")
    tp = throughput(table)
    ax[1].bar([str(w) for w in tp], list(tp.values()), color="gray")
    ax[1].set_xlabel("ranks (world size)")
    ax[1].set_ylabel("global samples / s")
    ax[1].set_title("throughput (measured)", fontsize="medium")
    return ax


def synthetic_calls(rng: Any, world: int | None = None) -> pd.DataFrame:
    """A trace with a known split: 2-4 ranks, 1-3 groups whose ``seq`` numbers coincide, 1-4 collectives
    each, every rank leaving a collective after the last one entered it; rows shuffled, index scrambled."""
    world = world or rng.randint(2, 4)
    rows = []
    t = 0.0
    for g in range(rng.randint(1, 3)):
        for seq in range(rng.randint(1, 4)):
            t += rng.uniform(0.01, 1.0)
            starts = [t + rng.uniform(0.0, 0.5) for _ in range(world)]
            last = max(starts)
            rows += [
                {"rank": r, "group": str(g), "seq": seq, "t_start": s, "t_end": last + rng.uniform(1e-4, 0.2)}
                for r, s in enumerate(starts)
            ]
    rng.shuffle(rows)
    index = rng.sample(range(10 * len(rows)), len(rows))
    return pd.DataFrame(rows, index=index)
