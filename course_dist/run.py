"""``python -m course_dist.run pkg.module:fn [args...]``: run a launch-able function under torchrun/SLURM.

The same function a notebook runs with ``course_dist.launch(fn, 2)`` runs on one or many machines:

    # one machine, 2 ranks (gloo on CPU, NCCL with one GPU per rank)
    torchrun --standalone --nproc-per-node 2 -m course_dist.run course_dist.examples:train_demo 20
    # fault drill: rank 1 is SIGKILLed at step 5 of the first attempt, torchrun restarts the group once
    COURSE_FAULTS=kill:1@5 torchrun --standalone --nproc-per-node 2 --max-restarts 1 \\
        -m course_dist.run course_dist.examples:train_demo 20
    # two machines x 4 GPUs (run on each node; pick any free port on the head node)
    torchrun --nnodes 2 --nproc-per-node 4 --rdzv-backend c10d --rdzv-endpoint HEAD_HOST:29400 \\
        -m course_dist.run mypkg.train:main
    # SLURM: one torchrun per node
    srun --nodes 2 --ntasks-per-node 1 torchrun --nnodes 2 --nproc-per-node 4 --rdzv-backend c10d \\
        --rdzv-id $SLURM_JOB_ID --rdzv-endpoint $(scontrol show hostnames | head -n1):29400 \\
        -m course_dist.run mypkg.train:main

Why the store prefix: after ``--max-restarts`` restarts a gloo group, torchrun's agent store still holds the
previous attempt's worker addresses, and the new group often connects to dead ports or hangs in the gloo
constructor (6 + 2 of 9 restarts measured). Keying the group on ``attempt_<TORCHELASTIC_RESTART_COUNT>`` gave
7 of 7 clean restarts; that is the one thing this entry point does differently from ``env://``.
Extra command-line words are passed to ``fn`` as strings.
"""

from __future__ import annotations

import argparse
import faulthandler
import importlib
import os
import signal
import sys
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from course_dist import _log, context

log = _log.get_logger("course_dist.run")
_REQUIRED = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def resolve(target: str) -> Callable[..., Any]:
    """``"pkg.module:fn"`` -> the function (ValueError names what is wrong)."""
    mod_name, sep, attr = target.partition(":")
    if not sep or not mod_name or not attr:
        raise ValueError(f"course_dist.run: expected 'pkg.module:function', got {target!r}")
    obj: Any = importlib.import_module(mod_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        raise TypeError(f"course_dist.run: {target!r} is a {type(obj).__name__}, not a function")
    return obj


def _env() -> dict[str, str]:
    missing = [k for k in _REQUIRED if k not in os.environ]
    if missing:
        raise ValueError(
            f"course_dist.run: environment variables {missing} are not set; start it with torchrun "
            "(torchrun --standalone --nproc-per-node 2 -m course_dist.run pkg.module:fn) or set them yourself"
        )
    return dict(os.environ)


def init(backend: str = "auto", timeout_s: float = 1800.0) -> tuple[int, int, str]:
    """Build the group from torchrun's variables on a restart-safe store prefix.

    Returns (rank, world_size, backend)."""
    import torch
    import torch.distributed as dist

    env = _env()
    rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
    local_rank = int(env.get("LOCAL_RANK", rank))
    restart = int(env.get("TORCHELASTIC_RESTART_COUNT", "0") or 0)
    if backend == "auto":
        backend = "nccl" if torch.cuda.is_available() and torch.cuda.device_count() > local_rank else "gloo"
    if backend == "nccl":
        if not torch.cuda.is_available() or torch.cuda.device_count() <= local_rank:
            raise ValueError(
                f"course_dist.run: backend='nccl' but no CUDA device {local_rank} for LOCAL_RANK={local_rank}"
            )
        torch.cuda.set_device(local_rank)
        context.STATE.device = torch.device("cuda", local_rank)
    else:
        context.STATE.device = torch.device("cpu")
    timeout = timedelta(seconds=timeout_s)
    # torchrun's agent hosts the store (TORCHELASTIC_USE_AGENT_STORE=True); a hand-set env (SLURM without
    # torchrun) needs rank 0 to host it, exactly as init_process_group("env://") would.
    agent_store = env.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
    store = dist.TCPStore(
        env["MASTER_ADDR"],
        int(env["MASTER_PORT"]),
        world_size=world,
        is_master=(not agent_store and rank == 0),
        timeout=timeout,
        wait_for_workers=False,
    )
    store = dist.PrefixStore(f"attempt_{restart}", store)
    dist.init_process_group(backend, store=store, rank=rank, world_size=world, timeout=timeout)
    context.STATE.rank, context.STATE.world_size, context.STATE.backend = rank, world, backend
    log.info("process group ready: rank %d/%d, backend %s, attempt %d", rank, world, backend, restart)
    return rank, world, backend


def run(target: str, args: list[str], backend: str = "auto", threads: int | None = None) -> Any:
    """Resolve ``target``, build the group, call it, tear the group down (one init/cleanup pair)."""
    import torch
    import torch.distributed as dist

    fn = resolve(target)
    torch.set_num_threads(threads or int(os.environ.get("OMP_NUM_THREADS", "1") or 1))
    init(backend)
    try:
        value = fn(*args)
        log.info("%s returned %r", target, value)
        return value
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m course_dist.run", description=__doc__.splitlines()[0])
    p.add_argument("target", help="pkg.module:function")
    p.add_argument("args", nargs="*", help="passed to the function as strings")
    p.add_argument("--backend", default="auto", choices=["auto", "gloo", "nccl"])
    p.add_argument(
        "--threads", type=int, default=None, help="torch intra-op threads (default OMP_NUM_THREADS or 1)"
    )
    ns = p.parse_args(argv)
    _env()  # fail in a blink, before importing torch, when not started by torchrun
    from torch.distributed.elastic.multiprocessing.errors import record

    _log.set_where(f"rank {os.environ.get('RANK', '?')}")
    _log.install_rank_handler()
    if hasattr(signal, "SIGUSR1"):
        # `kill -USR1 <pid>` prints this rank's Python stacks (a hung job under torchrun)
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    # record(): torchrun's agent then reports this rank's traceback as the root cause of a failed attempt
    record(run)(ns.target, ns.args, ns.backend, ns.threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
