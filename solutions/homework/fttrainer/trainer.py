"""The training loop: resume, train with DDP, checkpoint every N steps and on SIGTERM, log metrics.

Works in three settings with one code path: a single process, ``torchrun`` (one or many machines; restarts
re-enter here and auto-resume from the newest complete checkpoint), and a rank started by
``course_dist.launch`` in a notebook (the process group already exists).
"""

from __future__ import annotations

import gc
import hashlib
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from .checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from .config import TrainConfig, check_resume_config
from .data import SyntheticDataset, check_dataset
from .ddp import StepStats, build_model, eval_loss, make_optimizer, make_scheduler, train_step, wrap_model
from .distributed import (
    DistInfo,
    any_rank,
    barrier,
    broadcast_choice,
    gather_reports,
    init_distributed,
    teardown,
)
from .metrics import MetricsLogger, process_start_time
from .preemption import Preemption, fault_hook, requeue_slurm_job
from .sampler import ElasticSampler
from .state import capture_state, restore_state

log = logging.getLogger(__name__)


def param_digest(model: nn.Module) -> str:
    """sha256 of every parameter's bytes, in registration order: equal digests <=> bitwise-equal
    parameters."""
    inner = model.module if isinstance(model, DDP) else model
    h = hashlib.sha256()
    for name, p in inner.named_parameters():
        h.update(name.encode())
        h.update(p.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


@dataclass
class Run:
    """Everything one attempt of a training run holds (built by :func:`setup`, passed to each part)."""

    cfg: TrainConfig
    info: DistInfo
    data: SyntheticDataset
    sampler: ElasticSampler
    model: nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: Any
    metrics: MetricsLogger
    ckpt_root: Path
    samples_log: Any = None
    step: int = 0
    epoch: int = 0
    resumed_from: int | None = None
    boot: dict[str, Any] | None = None
    """Wall-clock times of this attempt: process created, trainer entered, group up (``loaded`` is added)."""


def train(cfg: TrainConfig) -> dict[str, Any]:
    """Train to the end (or ``max_steps``, or SIGTERM); returns a summary on every rank.

    Contract (the drills rely on it): :func:`setup` builds the objects, :func:`resume` continues from the
    newest complete checkpoint, :func:`train_loop` runs the steps (each: :func:`metrics_row` into the metrics,
    :func:`save` every ``ckpt_every`` steps, at ``max_steps`` and after SIGTERM), :func:`finish` writes the
    summary. Summary keys: ``step``, ``epoch``, ``eval_loss``, ``param_digest``, ``resumed_from`` (step or
    None), ``stopped`` ("done", "max_steps" or "sigterm"), ``rank``, ``world_size``, ``dataset``. Rank
    0 writes
    it to ``<run_dir>/final.json`` and the unwrapped model's ``state_dict`` to ``<run_dir>/final_params.pt``.
    """
    torch.set_num_threads(cfg.threads)
    boot = {"process": process_start_time(), "enter": time.time()}  # the recovery time's parts
    info = init_distributed(cfg.backend)
    barrier(info)  # the group is only formed once every rank arrived: time the rendezvous, not the import
    boot["group"] = time.time()
    try:
        run = setup(cfg, info)
        boot["setup"] = time.time()
        run.boot = boot
        resume(run)
        with Preemption() as pre:
            stopped = train_loop(run, pre)
        summary = finish(run, stopped)
        if stopped == "sigterm" and cfg.requeue and info.rank == 0:
            requeue_slurm_job()
        return summary
    finally:
        # DDP's reducer holds the process group: release the run (and its DDP) first, so the group is
        # destroyed here and not at interpreter exit, where gloo's threads can abort a finished rank (SIGABRT,
        # "terminate called without an active exception"), which torchrun answers with a needless restart
        run = None  # noqa: F841
        gc.collect()
        teardown(info)


def setup(cfg: TrainConfig, info: DistInfo) -> Run:
    """Data, sampler, model (DDP when world > 1), optimizer, scheduler, metrics logger: a fresh run at
    step 0."""
    data = SyntheticDataset(
        cfg.data_size, cfg.in_dim, cfg.classes, cfg.data_seed, cfg.data_version, cfg.data_owner
    )
    sampler = ElasticSampler(
        len(data), cfg.global_batch, cfg.micro_batch, info.world_size, info.rank, cfg.seed
    )
    model = wrap_model(build_model(cfg), info.world_size, info.device)
    # per-rank dropout stream, independent of the init stream: ranks must not draw the same masks
    torch.manual_seed(cfg.seed * 1000 + 1 + info.rank)
    optimizer = make_optimizer(model, cfg)
    scheduler = make_scheduler(optimizer, cfg, sampler.steps_per_epoch * cfg.epochs)
    run_dir = Path(cfg.run_dir)
    metrics = MetricsLogger(run_dir, info.rank)
    samples_log = None
    if cfg.log_samples:
        samples_log = open(run_dir / "metrics" / f"samples-rank{info.rank}.jsonl", "a", buffering=1)
    return Run(cfg, info, data, sampler, model, optimizer, scheduler, metrics, run_dir / "ckpt", samples_log)


def resume(run: Run) -> int | None:
    """Continue from the newest complete checkpoint, if any; returns its step (None: a fresh start).

    Rank 0 alone scans and verifies (``latest_checkpoint``) and broadcasts its choice: ranks that each scan a
    shared filesystem can see different listings and resume different steps. Every rank then loads it (to the
    CPU), refuses another dataset (``check_dataset``) or other training fields (``check_resume_config``)
    before touching anything, and restores the state. Logs the ``start`` event either way.
    """
    info = run.info
    choice = latest_checkpoint(run.ckpt_root) if info.rank == 0 else None
    path = broadcast_choice(None if choice is None else str(choice), info)
    if path is not None:
        shared, local = load_checkpoint(path, info.rank)
        check_dataset(shared["dataset"], run.data.meta)  # refuse before touching anything
        check_resume_config(shared["config"], run.cfg)
        run.step, run.epoch = restore_state(
            shared, local, run.model, run.optimizer, run.scheduler, run.sampler
        )
        run.resumed_from = run.step
        if shared["world_size"] != info.world_size:
            log.warning(
                "resuming a world-%d checkpoint at world %d: the sample stream continues exactly, RNG "
                "streams of new ranks are reseeded",
                shared["world_size"],
                info.world_size,
            )
    boot = {**(run.boot or {}), "loaded": time.time()}
    run.metrics.event(
        "start",
        boot=boot,
        attempt=info.attempt,
        world_size=info.world_size,
        resumed_from=run.resumed_from,
        dataset=run.data.meta.to_dict(),
        config=run.cfg.to_dict(),
        time=time.time(),
    )
    if info.rank == 0:
        log.info(
            "%s; %d steps/epoch x %d epochs, accum %d, resume from %s",
            run.data.meta.version,
            run.sampler.steps_per_epoch,
            run.cfg.epochs,
            run.sampler.accum,
            path,
        )
    return run.resumed_from


def save(run: Run, step: int) -> float:
    """Checkpoint ``step`` on every rank (two-phase: every rank's RNG file, rank 0's shared state); logs a
    ``checkpoint`` event and returns the seconds it took."""
    t = time.perf_counter()
    info = run.info
    shared, local = capture_state(
        run.model,
        run.optimizer,
        run.scheduler,
        run.sampler,
        step,
        run.epoch,
        run.cfg,
        run.data.meta,
        info.world_size,
    )
    save_checkpoint(
        run.ckpt_root,
        step,
        shared if info.rank == 0 else None,
        local,
        info.rank,
        info.world_size,
        run.cfg.keep_last,
        gather=(lambda obj: gather_reports(obj, info)) if info.world_size > 1 else None,
    )
    seconds = time.perf_counter() - t
    run.metrics.event("checkpoint", step=step, seconds=seconds, attempt=info.attempt, time=time.time())
    return seconds


def metrics_row(run: Run, stats: StepStats, micro_batches: list[list[int]], step_s: float) -> dict[str, Any]:
    """The ``step`` row of :data:`metrics.STEP_FIELDS` for the step just finished (``run.step``)."""
    n = sum(len(mb) for mb in micro_batches)
    return {
        "step": run.step,
        "epoch": run.epoch,
        "rank": run.info.rank,
        "world_size": run.info.world_size,
        "attempt": run.info.attempt,
        "loss": stats.loss,
        "lr": run.scheduler.get_last_lr()[0],
        "step_s": step_s,
        "compute_s": stats.compute_s,
        "wait_s": stats.wait_s,
        "sync_s": stats.sync_s,
        "samples": n,
        "samples_per_s": n / step_s,
        "dataset_version": run.data.meta.version,
        "time": time.time(),
    }


def train_loop(run: Run, pre: Any) -> str:
    """Steps until the end, ``max_steps`` or SIGTERM (``pre.requested`` on any rank); returns why it stopped.

    Every step: ``course_dist.step`` (fault drills) first, ``train_step`` with the stop-flag probe, step += 1,
    the epoch moves on after its last step (so that step's checkpoint resumes at the next epoch's start), the
    metrics row, then a checkpoint when due. A final checkpoint is written if the last step is not saved yet.
    """
    cfg, info, sampler = run.cfg, run.info, run.sampler
    fault, stopped, last_saved = fault_hook(), "done", run.resumed_from
    stop = [False]

    def probe() -> None:  # one 4-byte all-reduce: every rank stops after the same step
        stop[0] = any_rank(pre.requested, info)

    while run.epoch < cfg.epochs and stopped == "done":
        sampler.set_epoch(run.epoch)
        for micro_batches in sampler:
            t0 = time.perf_counter()
            fault(run.step)  # drills: SIGKILL / raise / hang / slow at this step (COURSE_FAULTS)
            stats = train_step(
                run.model, run.optimizer, run.scheduler, run.data, micro_batches, info.device, probe
            )
            run.step += 1
            if sampler.consumed >= sampler.steps_per_epoch * cfg.global_batch:
                run.epoch += 1
            run.metrics.step(metrics_row(run, stats, micro_batches, time.perf_counter() - t0))
            if run.samples_log is not None:
                idx = [i for mb in micro_batches for i in mb]
                run.samples_log.write(
                    json.dumps({"step": run.step, "epoch": sampler.epoch, "idx": idx}) + "\n"
                )
            if info.rank == 0 and cfg.log_every and run.step % cfg.log_every == 0:
                log.info("step %d epoch %d loss %.4f", run.step, run.epoch, stats.loss)
            if stop[0]:
                stopped = "sigterm"
            elif cfg.max_steps and run.step >= cfg.max_steps:
                stopped = "max_steps"
            if stopped != "done" or (cfg.ckpt_every and run.step % cfg.ckpt_every == 0):
                save(run, run.step)
                last_saved = run.step
            if stopped != "done" or run.epoch != sampler.epoch:
                break
    if last_saved != run.step:
        save(run, run.step)
    return stopped


def finish(run: Run, stopped: str) -> dict[str, Any]:
    """The summary (on every rank); rank 0 writes ``final.json`` and ``final_params.pt``; closes the logs."""
    info = run.info
    summary = {
        "step": run.step,
        "epoch": run.epoch,
        "eval_loss": eval_loss(run.model, run.data, info.device),
        "param_digest": param_digest(run.model),
        "resumed_from": run.resumed_from,
        "stopped": stopped,
        "rank": info.rank,
        "world_size": info.world_size,
        "dataset": run.data.meta.to_dict(),
    }
    run.metrics.event("end", **{k: v for k, v in summary.items() if k != "rank"}, time=time.time())
    run.metrics.close()
    if run.samples_log is not None:
        run.samples_log.close()
    if info.rank == 0:
        run_dir = Path(run.cfg.run_dir)
        inner = run.model.module if isinstance(run.model, DDP) else run.model
        torch.save({k: v.detach().cpu() for k, v in inner.state_dict().items()}, run_dir / "final_params.pt")
        (run_dir / "final.json").write_text(json.dumps(summary, indent=1))
        log.info("finished: %s", {k: summary[k] for k in ("step", "epoch", "eval_loss", "stopped")})
    return summary


def is_torchrun() -> bool:
    """True inside a torchrun worker."""
    return "TORCHELASTIC_RUN_ID" in os.environ
