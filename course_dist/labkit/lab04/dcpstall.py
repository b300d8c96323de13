"""What a save costs the training loop: ``dcp.save`` (blocking) against ``dcp.async_save`` (a CPU copy, then a
background write), on the sharded model of :mod:`.sharded` at world 2, and the resharded load.

Per round and rank: ``steps`` plain steps (the baseline step time), one blocking save, one asynchronous save
(the order alternates per round, so drift hits both alike). For the asynchronous save, training goes on while
the write runs: the steps taken before the future is done are timed, and their excess over the round's
baseline median is the slowdown the background write causes (it shares the CPUs and the disk; on a GPU node
also host memory bandwidth). ``stall`` = the time ``save``/``async_save`` blocked + that excess. Numbers of
this machine's CPUs and disk (gloo, no GPU): a GPU's device-to-host copy is not in them. Never a solution.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd
import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp

import course_dist

from .sharded import app_state, build, load_into, train


def _timed_steps(model: Any, opt: Any, first: int, n: int) -> list[float]:
    out = []
    for s in range(first, first + n):
        t0 = time.perf_counter()
        train(model, opt, range(s, s + 1))
        out.append(time.perf_counter() - t0)
    return out


def _all_done(done: bool) -> bool:
    """Every rank's write finished? Training steps are collectives: the ranks must agree on how many they take
    while the write runs (each deciding by its own future hangs when one finishes a step earlier)."""
    flag = torch.tensor([1 if done else 0])
    dist.all_reduce(flag, op=dist.ReduceOp.MIN)
    return bool(flag.item())


def _stall_rank(root: str, width: int, depth: int, rounds: int, steps: int) -> list[dict[str, float]]:
    """Every rank: ``rounds`` interleaved rounds of baseline steps, a blocking and an asynchronous save."""
    group = dist.new_group(backend="gloo")  # the async write's collectives run in a thread, beside training's
    model, opt = build(width=width, depth=depth)
    train(model, opt, range(0, 3))  # warm-up: AdamW's moments exist, FSDP's buffers are allocated
    step, rows = 3, []
    for i in range(rounds):
        base = _timed_steps(model, opt, step, steps)
        step += steps
        row: dict[str, float] = {"round": i, "step_s": statistics.median(base)}
        for mode in (("sync", "async") if i % 2 == 0 else ("async", "sync")):
            path = Path(root) / f"round{i}-{mode}"
            dist.barrier()
            t0 = time.perf_counter()
            if mode == "sync":
                dcp.save(app_state(model, opt), checkpoint_id=path, process_group=group)
                row["sync_blocked_s"] = time.perf_counter() - t0
                continue
            fut = dcp.async_save(app_state(model, opt), checkpoint_id=path, process_group=group)
            row["async_blocked_s"] = time.perf_counter() - t0
            during: list[float] = []
            while not _all_done(fut.done()) and len(during) < 10 * steps:
                during += _timed_steps(model, opt, step, 1)
                step += 1
            fut.result()
            row["async_write_s"] = time.perf_counter() - t0
            row["steps_during_write"] = len(during)
            row["async_excess_s"] = sum(max(0.0, d - row["step_s"]) for d in during)
        row["async_stall_s"] = row["async_blocked_s"] + row["async_excess_s"]
        rows.append(row)
    return rows


def measure_stall(width: int = 256, depth: int = 2, rounds: int = 5, steps: int = 5,
                  timeout: float = 300.0) -> pd.DataFrame:
    """One row per round (rank 0's view; both ranks wait for each other at every save): the baseline step,
    the blocking save, the asynchronous save's blocked time, write time, steps taken meanwhile and stall."""
    if rounds < 1 or steps < 1:
        raise ValueError(f"rounds and steps must be >= 1, got rounds={rounds}, steps={steps}")
    tmp = tempfile.mkdtemp(prefix="lab04-stall-")
    try:
        out = course_dist.launch(_stall_rank, 2, args=(tmp, width, depth, rounds, steps), timeout=timeout,
                                 stream=False)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    df = pd.DataFrame(out[0])
    df["bytes_per_rank"] = _state_bytes(width, depth) / 2
    return df


def _state_bytes(width: int, depth: int) -> float:
    """Model + AdamW moments in fp32 (3 copies of every parameter), the whole world's."""
    params = 16 * width + width + (depth - 1) * (width * width + width) + width * 4 + 4
    return 3 * 4 * params


def _load_rank(path: str, width: int, depth: int) -> float:
    model, opt = build(seed=99, width=width, depth=depth)
    dist.barrier()
    t0 = time.perf_counter()
    load_into(model, opt, Path(path))
    return time.perf_counter() - t0


def _save_once(path: str, width: int, depth: int) -> None:
    model, opt = build(width=width, depth=depth)
    train(model, opt, range(0, 2))
    dcp.save(app_state(model, opt), checkpoint_id=path)


def measure_load(worlds: tuple[int, ...] = (2, 1, 3), width: int = 256, depth: int = 2, rounds: int = 3,
                 timeout: float = 300.0) -> pd.DataFrame:
    """Save once at world 2, then load it at each world size in ``worlds`` (rounds interleaved): the load
    time (slowest rank) per round; world 2 is the load without resharding."""
    tmp = tempfile.mkdtemp(prefix="lab04-load-")
    try:
        path = str(Path(tmp) / "ckpt")
        course_dist.launch(_save_once, 2, args=(path, width, depth), timeout=timeout, stream=False)
        rows = []
        for i in range(rounds):
            for w in worlds:
                got = course_dist.launch(_load_rank, w, args=(path, width, depth), timeout=timeout,
                                         stream=False)
                rows.append({"round": i, "world": w, "load_s": max(got)})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return pd.DataFrame(rows)
