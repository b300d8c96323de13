"""The simple checkpointer exercises 3 and 4 lean on (NOT exercise 1's or 2's answer), the stall
measurement of the solution card, and the rank functions the elastic and recovery drills launch.

    path = lab04.simple_save(root, trainer)          # EVERY rank calls it; rank 0 writes, then all meet
    lab04.simple_load(root, fresh_trainer)           # -> its step, or None
    lab04.measure_save(save_checkpoint, capture_state, cfg, root)   # the card's latency/capacity inputs
"""

from __future__ import annotations

import copy
import os
import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

import course_dist

from .trainer import BatchFn, Config, Trainer, params_vector

SAVE_WAIT_S = 15.0  # a rank arrives within milliseconds of the others; 15 s is for a loaded 2-core box


# ---- the simple checkpointer exercises 4 and 5 lean on (NOT exercise 1's or 2's answer) --------------------
def simple_save(root: str | os.PathLike, tr: Trainer, *, durable: bool = False,
                wait_s: float = SAVE_WAIT_S) -> Path:
    """Call on **every** rank: rank 0 writes model, optimizer, scheduler and position to
    ``root/simple-<step>.pt`` (tmp + rename), then every rank meets in a barrier.

    Deliberately minimal: no RNG (use ``Config(stateless_rng=True)``), no checksums, no manifest, nothing per
    rank, fsync only if ``durable``. Good enough for a crashed *process*; exercises 1-3 build the real one.
    Called on some ranks only (``if rank == 0: simple_save(...)``), the barrier would wait for ranks that are
    already in the next step's all-reduce until the launcher's timeout: instead, a rank that does not arrive
    within ``wait_s`` seconds makes the caller raise a RuntimeError naming the missing ranks.
    """
    path = Path(root) / f"simple-{tr.step:08d}.pt"
    if tr.world_size > 1:
        _all_ranks_arrive(tr, wait_s)
    if tr.rank == 0:
        state = {
            "model": tr.model.state_dict(),
            "optimizer": tr.optimizer.state_dict(),
            "scheduler": tr.scheduler.state_dict(),
            "step": tr.step,
            "epoch": tr.epoch,
            "consumed": tr.consumed,
            "config": tr.cfg.digest(),
        }
        tmp = path.with_suffix(".tmp")
        with open(tmp, "wb") as f:
            torch.save(state, f)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
        if durable:
            fd = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    if tr.world_size > 1:
        dist.barrier()  # nobody runs ahead of a save that may be needed for the restart
    return path


def _all_ranks_arrive(tr: Trainer, wait_s: float) -> None:
    """Each rank marks its arrival at this step's save in the process group's store, then waits for the others
    (not a collective: a rank that never calls simple_save is then named, not waited on forever)."""
    store = dist.distributed_c10d._get_default_store()
    key = f"lab04/simple_save/{tr.step}"
    store.set(f"{key}/{tr.rank}", "1")
    deadline = time.monotonic() + wait_s
    missing = list(range(tr.world_size))
    while missing:
        missing = [r for r in missing if not store.check([f"{key}/{r}"])]
        if missing and time.monotonic() > deadline:
            raise RuntimeError(
                f"simple_save at step {tr.step}: rank(s) {missing} did not call simple_save within "
                f"{wait_s:.0f} s (rank {tr.rank} did). Every rank must call simple_save at the same step: "
                f"rank 0 writes, then all meet in a barrier; called on rank 0 only it waits for ranks "
                f"already in the next step.")
        if missing:
            time.sleep(0.005)


def simple_load(root: str | os.PathLike, tr: Trainer) -> int | None:
    """Load the newest ``simple-*.pt`` into ``tr`` (every rank reads it); returns its step or None."""
    files = sorted(Path(root).glob("simple-*.pt"))
    if not files:
        return None
    state = torch.load(files[-1], map_location=tr.device, weights_only=False)
    if state["config"] != tr.cfg.digest():
        raise ValueError(
            f"{files[-1]} was written by config {state['config']}, this run is {tr.cfg.digest()}"
        )
    tr.model.load_state_dict(state["model"])
    tr.optimizer.load_state_dict(state["optimizer"])
    tr.scheduler.load_state_dict(state["scheduler"])
    tr.step, tr.epoch, tr.consumed = state["step"], state["epoch"], state["consumed"]
    return tr.step


def dir_bytes(path: str | os.PathLike) -> int:
    """Total size of the files under ``path``."""
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def to_cpu(obj: Any) -> Any:
    """A deep copy with every tensor copied to the CPU: the staging step of an asynchronous save."""
    if isinstance(obj, torch.Tensor):
        return obj.detach().to("cpu", copy=True)
    if isinstance(obj, dict):
        return {k: to_cpu(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(to_cpu(v) for v in obj)
    return copy.deepcopy(obj)


def measure_save(save: Callable[..., Any], capture: Callable[[Trainer], dict], cfg: Config,
                 root: str | os.PathLike, *, repeats: int = 5, steps: int = 5, every: int = 500) -> dict:
    """The training stall of one checkpoint with *your* ``capture`` + ``save`` (single process), beside the
    step time, and what it costs when saving every ``every`` steps.

    Returns step_s (median train step), save_s (median capture + durable save: the stall), bytes_per_rank
    (size of the published directory), every, and overhead_pct = 100 * save_s / (every * step_s).
    """
    root = Path(root)
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    tr = Trainer(cfg)
    step_t, save_t = [], []
    for _ in range(steps):
        t0 = time.perf_counter()
        tr.train_step()
        step_t.append(time.perf_counter() - t0)
    path = None
    for i in range(repeats):
        t0 = time.perf_counter()
        path = Path(save(root, tr.step + i, capture(tr), keep=2))
        save_t.append(time.perf_counter() - t0)
    step_s, save_s = statistics.median(step_t), statistics.median(save_t)
    out = {"step_s": step_s, "save_s": save_s, "bytes_per_rank": dir_bytes(path), "every": every,
           "overhead_pct": 100.0 * save_s / (every * step_s)}
    shutil.rmtree(root, ignore_errors=True)
    return out


# ---- rank functions the drills launch (kept here: this module imports fast in a fresh rank) ----------------
def _train_part(cfg: Config, root: str, start_steps: int, end_steps: int, batches: BatchFn | None) -> dict:
    """On every rank: resume from the simple checkpoint in ``root`` (if any), train to ``end_steps``."""
    tr = Trainer(cfg, batches=batches)
    if root:
        simple_load(root, tr)
    losses = []
    while tr.step < end_steps:
        losses.append(tr.train_step())
        if tr.step == start_steps:
            simple_save(root, tr)
    return {"losses": losses, "seen": tr.seen, "eval": tr.eval_loss(), "params": params_vector(tr.model)}


def _baseline(cfg: Config, steps: int) -> Any:
    tr = Trainer(cfg)
    for i in range(steps):
        course_dist.step(i)
        tr.train_step()
    return params_vector(tr.model)
