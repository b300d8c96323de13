"""fttrainer - the reference resolution of the homework: a small fault-tolerant DDP trainer.

Modules (one concept each): ``config`` (dataclass + CLI), ``data`` (synthetic dataset + data contract),
``sampler`` (elastic exactly-once sampling), ``ddp`` (model, DDP, no_sync accumulation, LR schedule),
``distributed`` (restart-safe process group), ``state`` (what a checkpoint holds), ``checkpoint`` (atomic
two-phase save/resume), ``metrics`` (per-rank logs, straggler report), ``trainer`` (setup, resume,
loop, save, metrics row, finish), ``preemption`` (SIGTERM, SLURM requeue, fault hook), ``train`` (entry
point),
``scaling`` (world 1/2/4 experiment). Entry point: ``python -m fttrainer.train --help``; the loop itself is
``fttrainer.trainer.train(cfg)`` (not re-exported: ``fttrainer.train`` is the entry-point module).
"""

from .checkpoint import (
    checkpoint_problem,
    latest_checkpoint,
    load_checkpoint,
    prune,
    save_checkpoint,
    verify_checkpoint,
)
from .config import ConfigMismatchError, TrainConfig, build_parser, check_resume_config
from .data import DatasetMeta, DatasetMismatchError, SyntheticDataset, check_dataset
from .ddp import build_model, make_scheduler, train_step
from .metrics import MetricsLogger, load_metrics, straggler_report
from .sampler import ElasticSampler, grad_accum_steps
from .scaling import plot_scaling, run_scaling
from .state import capture_state, restore_state, rng_state, set_rng_state
from .trainer import param_digest

__all__ = [
    "ConfigMismatchError",
    "check_resume_config",
    "checkpoint_problem",
    "DatasetMeta",
    "DatasetMismatchError",
    "ElasticSampler",
    "MetricsLogger",
    "SyntheticDataset",
    "TrainConfig",
    "build_model",
    "build_parser",
    "capture_state",
    "check_dataset",
    "grad_accum_steps",
    "latest_checkpoint",
    "load_checkpoint",
    "load_metrics",
    "make_scheduler",
    "param_digest",
    "plot_scaling",
    "prune",
    "restore_state",
    "rng_state",
    "run_scaling",
    "save_checkpoint",
    "set_rng_state",
    "straggler_report",
    "train_step",
    "verify_checkpoint",
]
