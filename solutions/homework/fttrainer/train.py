"""Entry point of the fault-tolerant trainer: ``python -m fttrainer.train [--option value ...]``.

Python must find the package: run these from the folder that holds it, or with that folder on ``PYTHONPATH``.
In the student repository ``make lab`` puts ``work/homework/`` (where a student's copy lives) on the venv's
``sys.path``, so they work from the repository root too. ``--help`` shows every option (generated from
``TrainConfig``) and these examples.

Single process (world 1, no process group)::

    python -m fttrainer.train --run-dir runs/demo --epochs 2

One machine, 2 ranks (gloo on CPU, NCCL on GPUs); restarts after a crash resume from the newest checkpoint::

    torchrun --standalone --nproc-per-node 2 --max-restarts 3 -m fttrainer.train --run-dir runs/demo

Two machines, 4 ranks each (run on both; ``--run-dir`` must be on a shared filesystem)::

    torchrun --nnodes 2 --nproc-per-node 4 --max-restarts 3 --rdzv-backend c10d \\
        --rdzv-endpoint $HEAD_NODE:29500 --rdzv-id job42 -m fttrainer.train --run-dir /shared/runs/job42

SLURM (one torchrun per node). At a time limit or a preemption SLURM sends SIGTERM (here 120 s early);
torchrun forwards it to the workers and SIGKILLs them after ``--shutdown-timeout`` (30 s by default): every
rank finishes its step, the group checkpoints (the save must fit in those 30 s; its seconds are in the
``checkpoint`` events), and rank 0 runs ``scontrol requeue $SLURM_JOB_ID`` (``--no-requeue`` turns it off), so
the job goes back to the queue and resumes from that checkpoint. ``--requeue`` alone covers node failures
and a preemption when the cluster's ``PreemptMode`` is REQUEUE (SLURM then requeues the job itself); after a
time limit, or a preemption under ``PreemptMode=CANCEL``, a job whose steps exit 0 ends COMPLETED unless it
requeues itself::

    #SBATCH --nodes=2 --ntasks-per-node=1 --gpus-per-node=4 --signal=TERM@120 --requeue --open-mode=append
    srun torchrun --nnodes $SLURM_NNODES --nproc-per-node 4 --max-restarts 3 --rdzv-backend c10d \\
        --rdzv-endpoint $(scontrol show hostnames $SLURM_NODELIST | head -1):29500 --rdzv-id $SLURM_JOB_ID \\
        -m fttrainer.train --run-dir /shared/runs/$SLURM_JOB_ID

In a notebook, on ranks started by ``course_dist.launch`` (the group exists already)::

    course_dist.launch(fttrainer.trainer.train, world_size=2, args=(TrainConfig(run_dir="runs/nb"),))

Fault drills: ``COURSE_FAULTS="kill:1@5"`` SIGKILLs rank 1 at step 5 (first attempt only), ``slow:1@0:0.05``
makes rank 1 a straggler.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from .config import TrainConfig, build_parser
from .trainer import train


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Each option's default shown, and the examples kept line for line."""


def cli_parser() -> argparse.ArgumentParser:
    """``TrainConfig``'s parser named after this package, with this module's docstring as its help text."""
    text = (__doc__ or "").replace("``", "").replace("::\n", ":\n")
    description, _, epilog = text.partition("\n\n")
    parser = build_parser()
    parser.prog = f"python -m {__package__}.train"
    parser.description = description + "\n\n" + epilog.partition("\n\n")[0]
    parser.epilog = epilog.partition("\n\n")[2]
    parser.formatter_class = _HelpFormatter
    return parser


def setup_logging() -> None:
    """One log line prefix per rank: '[rank 1 attempt 0] ...'."""
    rank = os.environ.get("RANK", "0")
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format=f"[rank {rank} attempt {attempt}] %(asctime)s %(name)s: %(message)s",
    )


def main(argv: list[str] | None = None) -> int:
    """Parse the command line (``--help``; a bad option or value exits 2 with argparse's message), train."""
    parser = cli_parser()  # before logging: --help and usage errors print nothing else
    ns = parser.parse_args(argv)
    try:
        cfg = TrainConfig(**vars(ns))
    except ValueError as e:  # a bad value: usage + message, exit status 2 (as TrainConfig.from_cli)
        parser.error(str(e))
    setup_logging()
    train(cfg)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
