"""The trainer's one configuration object, its command line and its checks.

Every field carries a docstring; :func:`build_parser` turns those docstrings into ``--help`` text, so the
command line can never drift from the dataclass. The config is saved inside every checkpoint
(``TrainConfig.to_dict``).

    python -m fttrainer.train --help
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import textwrap
from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Any


@dataclass
class TrainConfig:
    """Everything one training run needs. Defaults are the homework's scaling workload (see bench/)."""

    run_dir: str = "runs/homework"
    """Folder for checkpoints (``<run_dir>/ckpt``) and metrics (``<run_dir>/metrics``); all ranks must share
    it."""
    seed: int = 0
    """Seed for model initialisation, dropout and the per-epoch shuffle."""
    epochs: int = 2
    """Number of passes over the dataset."""
    max_steps: int = 0
    """Stop after this many global optimizer steps (0: no limit); a checkpoint is written when it stops."""
    global_batch: int = 512
    """Samples per optimizer step over all ranks; fixed whatever the world size (= micro_batch x accum x
    world)."""
    micro_batch: int = 128
    """Samples per forward/backward on one rank; gradient accumulation makes up the rest of the global
    batch."""
    optimizer: str = "adamw"
    """Optimizer: adamw, or sgd (plain SGD without momentum: its update is -lr x gradient, so a
    gradient scaled
    by mistake shows in the parameters; AdamW's normalisation hides a constant scale)."""
    lr: float = 1e-3
    """Peak learning rate."""
    warmup_steps: int = 10
    """Linear warm-up steps before the cosine decay to 10% of ``lr``."""
    weight_decay: float = 0.0
    """Weight decay (decoupled for AdamW)."""
    dropout: float = 0.0
    """Dropout probability after each hidden layer (> 0 makes the run depend on the RNG state)."""
    in_dim: int = 256
    """Input features of the synthetic dataset."""
    hidden: int = 1024
    """Width of each hidden layer of the MLP."""
    depth: int = 3
    """Number of hidden layers of the MLP."""
    classes: int = 10
    """Number of classes of the synthetic dataset."""
    data_size: int = 16384
    """Samples in the synthetic dataset; an epoch is ``data_size // global_batch`` steps (the tail is
    dropped)."""
    data_seed: int = 1234
    """Seed of the synthetic dataset's contents (changes its fingerprint)."""
    data_version: str = "v1"
    """Version label of the dataset, recorded in metadata, checkpoints and metrics; a resume must match it."""
    data_owner: str = "course-staff"
    """Owner of the dataset, recorded in its metadata."""
    ckpt_every: int = 50
    """Write a checkpoint every this many steps (0: only on stop, SIGTERM and at the end)."""
    keep_last: int = 3
    """Checkpoints kept on disk (older complete ones are deleted after a successful save)."""
    log_samples: bool = False
    """Also log the sample indices each rank trained on (``samples-rank*.jsonl``), for exactly-once checks."""
    backend: str = "auto"
    """Process-group backend: auto (nccl with CUDA, else gloo), gloo or nccl."""
    threads: int = 1
    """torch intra-op threads per rank (more ranks x threads than cores slows everything down)."""
    log_every: int = 10
    """Log a progress line every this many steps on rank 0 (metrics files get every step)."""
    requeue: bool = True
    """After a SIGTERM checkpoint under SLURM (``SLURM_JOB_ID`` set), rank 0 runs ``scontrol requeue
    $SLURM_JOB_ID`` so that a time limit, or a preemption under ``PreemptMode=CANCEL``, resumes instead of
    ending the job (under ``PreemptMode=REQUEUE`` SLURM requeues a requeueable job itself)."""

    def __post_init__(self) -> None:
        # Validated when built (as torchtitan's JobConfig): a bad value fails at once, naming the field, not
        # at the first checkpoint after an hour of training - and not once per torchrun restart.
        validate(self)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TrainConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown TrainConfig fields {unknown}; known: {sorted(known)}")
        return cls(**d)

    @classmethod
    def from_cli(cls, argv: list[str] | None = None) -> TrainConfig:
        parser = build_parser()
        ns = parser.parse_args(argv)
        try:
            return cls(**vars(ns))
        except ValueError as e:  # a bad value: argparse's usage + message, exit status 2
            parser.error(str(e))
            raise  # unreachable: parser.error exits


#: Fields that define the optimisation problem: a resume under other values is refused (naming them), because
#: the restored optimizer/scheduler state would silently override some (lr) and others (dropout, epochs, the
#: model shape, the data) would change the run without a trace. Other fields (run_dir, ckpt_every, keep_last,
#: micro_batch, backend, threads, log_*) may change between attempts: they do not change the mathematics
#: (micro_batch only the summation order), and an elastic resize may need another micro_batch.
TRAINING_FIELDS = (
    "seed",
    "epochs",
    "global_batch",
    "optimizer",
    "lr",
    "warmup_steps",
    "weight_decay",
    "dropout",
    "in_dim",
    "hidden",
    "depth",
    "classes",
    "data_size",
    "data_seed",
)


class ConfigMismatchError(ValueError):
    """Resuming a checkpoint under a config whose training-relevant fields differ."""


def check_resume_config(saved: dict[str, Any], current: TrainConfig) -> None:
    """Raise :class:`ConfigMismatchError` naming every training field whose value differs from the
    saved one."""
    diffs = [
        f"{name}: checkpoint {saved.get(name)!r}, now {getattr(current, name)!r}"
        for name in TRAINING_FIELDS
        if saved.get(name) != getattr(current, name)
    ]
    if diffs:
        raise ConfigMismatchError(
            "refusing to resume: training fields differ from the checkpoint's config ("
            + "; ".join(diffs)
            + "). Restore them, or start a fresh run in another --run-dir."
        )


def validate(cfg: TrainConfig) -> None:
    """ValueError naming the first field whose value is out of range (and the value received)."""

    def need(ok: bool, name: str, rule: str) -> None:
        if not ok:
            raise ValueError(f"TrainConfig.{name} must be {rule}, got {getattr(cfg, name)!r}")

    for name in (
        "epochs",
        "global_batch",
        "micro_batch",
        "in_dim",
        "hidden",
        "depth",
        "threads",
        "keep_last",
    ):
        need(isinstance(getattr(cfg, name), int) and getattr(cfg, name) >= 1, name, ">= 1")
    for name in ("max_steps", "warmup_steps", "ckpt_every", "log_every"):
        need(isinstance(getattr(cfg, name), int) and getattr(cfg, name) >= 0, name, ">= 0")
    need(cfg.classes >= 2, "classes", ">= 2")
    need(cfg.lr > 0, "lr", "> 0")
    need(cfg.weight_decay >= 0, "weight_decay", ">= 0")
    need(0.0 <= cfg.dropout < 1.0, "dropout", "in [0, 1)")
    need(cfg.optimizer in ("adamw", "sgd"), "optimizer", "'adamw' or 'sgd'")
    need(cfg.backend in ("auto", "gloo", "nccl"), "backend", "'auto', 'gloo' or 'nccl'")
    need(
        cfg.global_batch % cfg.micro_batch == 0,
        "global_batch",
        f"a multiple of micro_batch={cfg.micro_batch}",
    )
    need(cfg.data_size >= cfg.global_batch, "data_size", f">= global_batch={cfg.global_batch}")
    need(bool(cfg.run_dir), "run_dir", "a non-empty path")


@lru_cache(maxsize=1)
def field_docs() -> dict[str, str]:
    """Attribute docstrings of :class:`TrainConfig` (the string literal right below each field)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(TrainConfig)))
    body = tree.body[0].body  # type: ignore[attr-defined]
    docs: dict[str, str] = {}
    for node, nxt in zip(body, body[1:], strict=False):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(nxt, ast.Expr)
            and isinstance(nxt.value, ast.Constant)
        ):
            docs[node.target.id] = " ".join(str(nxt.value.value).split())  # type: ignore[attr-defined]
    return docs


def _help(docs: dict[str, str], name: str) -> str:
    # argparse %-formats help strings (for %(default)s): a literal "10% of" must be written "10%% of"
    return docs.get(name, "").replace("%", "%%")


def build_parser() -> argparse.ArgumentParser:
    """An argparse parser with one ``--kebab-case`` option per field, help text from the field docstrings."""
    p = argparse.ArgumentParser(
        prog="python -m <package>.train",
        description="Fault-tolerant DDP trainer (homework). Every option is a TrainConfig field.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    docs = field_docs()
    types = {"int": int, "float": float, "str": str}
    for f in fields(TrainConfig):
        flag = "--" + f.name.replace("_", "-")
        if f.type in ("bool", bool):
            p.add_argument(
                flag,
                dest=f.name,
                action=argparse.BooleanOptionalAction,
                default=f.default,
                help=_help(docs, f.name),
            )
        else:
            typ = types[f.type if isinstance(f.type, str) else f.type.__name__]
            p.add_argument(flag, dest=f.name, type=typ, default=f.default, help=_help(docs, f.name))
    return p


def to_cli(cfg: TrainConfig) -> list[str]:
    """The command-line arguments that rebuild ``cfg`` (inverse of ``TrainConfig.from_cli``)."""
    out: list[str] = []
    for f in fields(cfg):
        v = getattr(cfg, f.name)
        flag = "--" + f.name.replace("_", "-")
        if isinstance(v, bool):
            out.append(flag if v else "--no-" + f.name.replace("_", "-"))
        else:
            out += [flag, str(v)]
    return out
