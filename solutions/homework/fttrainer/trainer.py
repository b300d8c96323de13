"""The training loop: resume, train with DDP, checkpoint every N steps and on SIGTERM, log metrics.

Works in three settings with one code path: a single process, ``torchrun`` (one or many machines; restarts
re-enter here and auto-resume from the newest complete checkpoint), and a rank started by
``course_dist.launch`` in a notebook (the process group already exists).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import signal
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from .checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from .config import TrainConfig
from .data import SyntheticDataset, check_dataset
from .ddp import build_model, eval_loss, make_optimizer, make_scheduler, train_step, wrap_model
from .distributed import DistInfo, any_rank, barrier, init_distributed, teardown
from .metrics import MetricsLogger
from .sampler import ElasticSampler
from .state import capture_state, restore_state

log = logging.getLogger(__name__)


def _fault_hook() -> Any:
    """``course_dist.step`` (applies ``COURSE_FAULTS`` drills: kill, raise, hang, slow), else a minimal
    stand-in."""
    try:
        from course_dist import step

        return step
    except ImportError:
        return _env_faults


def _env_faults(i: int) -> None:
    """Stand-in for ``course_dist.step`` when course_dist is absent: ``kill:R@S`` and ``slow:R@S:SEC``,
    attempt 0."""
    plan = os.environ.get("COURSE_FAULTS", "")
    if not plan or os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") != "0":
        return
    rank = int(os.environ.get("RANK", "0"))
    for item in plan.split(","):
        kind, _, rest = item.partition(":")
        who, _, when = rest.partition("@")
        at, _, secs = when.partition(":")
        if int(who) != rank:
            continue
        if kind == "kill" and i == int(at):
            os.kill(os.getpid(), signal.SIGKILL)
        elif kind == "slow" and i >= int(at):
            time.sleep(float(secs))


def param_digest(model: nn.Module) -> str:
    """sha256 of every parameter's bytes, in registration order: equal digests <=> bitwise-equal
    parameters."""
    inner = model.module if isinstance(model, DDP) else model
    h = hashlib.sha256()
    for name, p in inner.named_parameters():
        h.update(name.encode())
        h.update(p.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


class _Preemption:
    """SIGTERM sets a flag; the loop turns it into 'checkpoint after this step, then exit' on every rank."""

    def __init__(self) -> None:
        self.requested = False
        self._old: Any = None

    def __enter__(self) -> _Preemption:
        try:
            self._old = signal.signal(signal.SIGTERM, self._handle)
        except ValueError:  # not the main thread (e.g. a notebook helper thread): no preemption handling
            self._old = None
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        self.requested = True

    def __exit__(self, *exc: Any) -> None:
        if self._old is not None:
            signal.signal(signal.SIGTERM, self._old)


def train(cfg: TrainConfig) -> dict[str, Any]:
    """Train to the end (or ``max_steps``, or SIGTERM); returns a summary on every rank.

    Contract (the drills rely on it):

    - set ``cfg.threads``; :func:`init_distributed`; build data, sampler, model (``build_model``, then
      ``wrap_model``), AdamW (``make_optimizer``), scheduler over ``steps_per_epoch x epochs`` steps;
    - resume from ``latest_checkpoint(<run_dir>/ckpt)`` if there is one: ``check_dataset`` first, then
      ``restore_state``;
    - every step: ``course_dist.step(step)`` (fault drills; ``_fault_hook``) first, then ``train_step`` with a
      probe that agrees on the SIGTERM flag (``any_rank``); steps count from 1; after an epoch's last step the
      epoch counter moves on, so that step's checkpoint resumes at the next epoch's start;
    - metrics: ``MetricsLogger(run_dir, rank)``: a ``start`` event (attempt, world_size, resumed_from,
      dataset, config), one ``step`` row per step (``STEP_FIELDS``), a ``checkpoint`` event (step, seconds)
      per save, an ``end`` event; with ``cfg.log_samples`` also ``<run_dir>/metrics/samples-rank<r>.jsonl``
      lines ``{"step", "epoch", "idx": [sample indices]}``;
    - checkpoint (every rank calls ``save_checkpoint``) every ``ckpt_every`` steps, at ``max_steps``, after
      SIGTERM (then stop), and at the end if the last step is not saved yet;
    - summary keys: ``step``, ``epoch``, ``eval_loss`` (``eval_loss``), ``param_digest``, ``resumed_from``
      (step or None), ``stopped`` ("done", "max_steps" or "sigterm"), ``rank``, ``world_size``, ``dataset``.
      Rank 0 writes it to ``<run_dir>/final.json`` and the unwrapped model's ``state_dict`` to
      ``<run_dir>/final_params.pt``.
    """
    torch.set_num_threads(cfg.threads)
    info = init_distributed(cfg.backend)
    try:
        return _train(cfg, info)
    finally:
        teardown(info)


def _train(cfg: TrainConfig, info: DistInfo) -> dict[str, Any]:
    rank, world = info.rank, info.world_size
    run_dir = Path(cfg.run_dir)
    ckpt_root = run_dir / "ckpt"
    data = SyntheticDataset(
        cfg.data_size, cfg.in_dim, cfg.classes, cfg.data_seed, cfg.data_version, cfg.data_owner
    )
    sampler = ElasticSampler(len(data), cfg.global_batch, cfg.micro_batch, world, rank, seed=cfg.seed)
    total_steps = sampler.steps_per_epoch * cfg.epochs
    model = wrap_model(build_model(cfg), world, info.device)
    torch.manual_seed(cfg.seed * 1000 + 1 + rank)  # per-rank dropout stream, independent of the init stream
    optimizer = make_optimizer(model, cfg)
    scheduler = make_scheduler(optimizer, cfg, total_steps)

    step, epoch, resumed_from = 0, 0, None
    path = latest_checkpoint(ckpt_root)
    if path is not None:
        shared, local = load_checkpoint(path, rank)
        check_dataset(shared["dataset"], data.meta)  # refuse before touching anything
        step, epoch = restore_state(shared, local, model, optimizer, scheduler, sampler)
        resumed_from = step
        if shared["world_size"] != world:
            log.warning(
                "resuming a world-%d checkpoint at world %d: the sample stream continues exactly, RNG "
                "streams of new ranks are reseeded",
                shared["world_size"],
                world,
            )
    metrics = MetricsLogger(run_dir, rank)
    metrics.event(
        "start",
        attempt=info.attempt,
        world_size=world,
        resumed_from=resumed_from,
        dataset=data.meta.to_dict(),
        config=cfg.to_dict(),
        time=time.time(),
    )
    samples_log = open(run_dir / "metrics" / f"samples-rank{rank}.jsonl", "a") if cfg.log_samples else None
    if rank == 0:
        log.info(
            "rank 0: %s; %d steps/epoch x %d epochs, accum %d, resume from %s",
            data.meta.version,
            sampler.steps_per_epoch,
            cfg.epochs,
            sampler.accum,
            path,
        )

    def save(at: int) -> None:
        t = time.perf_counter()
        shared, local = capture_state(model, optimizer, scheduler, sampler, at, epoch, cfg, data.meta, world)
        save_checkpoint(
            ckpt_root,
            at,
            shared if rank == 0 else None,
            local,
            rank,
            world,
            cfg.keep_last,
            barrier=(lambda: barrier(info)) if world > 1 else None,
        )
        metrics.event(
            "checkpoint", step=at, seconds=time.perf_counter() - t, attempt=info.attempt, time=time.time()
        )

    fault, stopped, last_saved = _fault_hook(), "done", resumed_from
    with _Preemption() as pre:
        while epoch < cfg.epochs and stopped == "done":
            sampler.set_epoch(epoch)
            for micro_batches in sampler:
                t0 = time.perf_counter()
                fault(step)  # drills: SIGKILL / raise / hang / slow at this step (COURSE_FAULTS)
                stop_box = [False]

                def probe(box: list[bool] = stop_box) -> None:
                    box[0] = any_rank(pre.requested, info)

                stats = train_step(model, optimizer, scheduler, data, micro_batches, info.device, probe)
                step += 1
                if sampler.consumed >= sampler.steps_per_epoch * cfg.global_batch:
                    epoch += 1  # the checkpoint of an epoch's last step records the next epoch's start
                step_s = time.perf_counter() - t0
                n = sum(len(mb) for mb in micro_batches)
                metrics.step(
                    {
                        "step": step,
                        "epoch": epoch,
                        "rank": rank,
                        "world_size": world,
                        "attempt": info.attempt,
                        "loss": stats.loss,
                        "lr": scheduler.get_last_lr()[0],
                        "step_s": step_s,
                        "compute_s": step_s - stats.wait_s - stats.sync_s,
                        "wait_s": stats.wait_s,
                        "sync_s": stats.sync_s,
                        "samples": n,
                        "samples_per_s": n / step_s,
                        "dataset_version": data.meta.version,
                        "time": time.time(),
                    }
                )
                if samples_log is not None:
                    samples_log.write(
                        json.dumps(
                            {
                                "step": step,
                                "epoch": sampler.epoch,
                                "idx": [i for mb in micro_batches for i in mb],
                            }
                        )
                        + "\n"
                    )
                    samples_log.flush()
                if rank == 0 and cfg.log_every and step % cfg.log_every == 0:
                    log.info(
                        "step %d epoch %d loss %.4f %.0f samples/s",
                        step,
                        epoch,
                        stats.loss,
                        n * world / step_s,
                    )
                if stop_box[0]:
                    stopped = "sigterm"
                elif cfg.max_steps and step >= cfg.max_steps:
                    stopped = "max_steps"
                if stopped != "done" or (cfg.ckpt_every and step % cfg.ckpt_every == 0):
                    save(step)
                    last_saved = step
                if stopped != "done" or epoch != sampler.epoch:
                    break
    if last_saved != step:
        save(step)
    summary = {
        "step": step,
        "epoch": epoch,
        "eval_loss": eval_loss(model, data, info.device),
        "param_digest": param_digest(model),
        "resumed_from": resumed_from,
        "stopped": stopped,
        "rank": rank,
        "world_size": world,
        "dataset": data.meta.to_dict(),
    }
    metrics.event("end", **{k: v for k, v in summary.items() if k != "rank"}, time=time.time())
    metrics.close()
    if samples_log is not None:
        samples_log.close()
    if rank == 0:
        inner = model.module if isinstance(model, DDP) else model
        torch.save({k: v.detach().cpu() for k, v in inner.state_dict().items()}, run_dir / "final_params.pt")
        (run_dir / "final.json").write_text(json.dumps(summary, indent=1))
        log.info("finished: %s", {k: summary[k] for k in ("step", "epoch", "eval_loss", "stopped")})
    return summary


def is_torchrun() -> bool:
    """True inside a torchrun worker."""
    return "TORCHELASTIC_RUN_ID" in os.environ
