"""Process-group setup that survives torchrun restarts, and the small collectives the trainer adds.

Under ``torchrun`` the elastic agent hosts a TCPStore at ``MASTER_ADDR:MASTER_PORT``
(``TORCHELASTIC_USE_AGENT_STORE=True``) that lives as long as the agent, i.e. across restarts of the workers.
torch's ``env://`` handler creates a fresh *client* for every attempt and says so ("a new TCPStore for every
retry so no need to add prefix"), but the *server* and its keys are the previous attempt's: the new group's
rendezvous keys meet the dead attempt's values (this course measured failed or hung gloo restarts without a
prefix, none with it: ``course_dist/run.py``). Keying the group by the attempt -
``PrefixStore(f"attempt_{TORCHELASTIC_RESTART_COUNT}", store)`` - gives each attempt a clean namespace.
Exactly as ``course_dist.run.init``: without torchrun's agent (a hand-set environment, e.g. ``srun`` with
``RANK``/``WORLD_SIZE``/``MASTER_*`` exported per task) nobody hosts the store, so rank 0 does
(``is_master=rank == 0``) - a hard-coded ``is_master=False`` waits for a server that never starts.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

log = logging.getLogger(__name__)


@dataclass
class DistInfo:
    """Where this process sits in the job."""

    rank: int
    """Global rank (0 in a single process)."""
    world_size: int
    """Number of ranks."""
    device: torch.device
    """The device this rank computes on."""
    owns_group: bool
    """True when :func:`init_distributed` created the process group (and :func:`teardown` must destroy it)."""
    attempt: int
    """torchrun restart attempt (``TORCHELASTIC_RESTART_COUNT``; 0 outside torchrun)."""


def _backend(backend: str) -> str:
    if backend == "auto":
        return "nccl" if torch.cuda.is_available() else "gloo"
    if backend not in ("gloo", "nccl"):
        raise ValueError(f"backend must be auto, gloo or nccl, got {backend!r}")
    return backend


def init_distributed(backend: str = "auto", timeout_s: float = 120.0) -> DistInfo:
    """Join (or create) the process group for this process.

    - already initialised (``course_dist.launch`` in a notebook): use it as it is;
    - ``WORLD_SIZE > 1`` (torchrun, or RANK/MASTER_* set by hand): build the group on a PrefixStore keyed by
      the restart attempt, the store hosted by torchrun's agent or else by rank 0;
    - otherwise: a single process, no process group at all (world 1 needs no collectives).
    """
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    if dist.is_available() and dist.is_initialized():
        rank, world = dist.get_rank(), dist.get_world_size()
        return DistInfo(rank, world, _device(dist.get_backend(), rank), owns_group=False, attempt=attempt)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world == 1:
        return DistInfo(0, 1, _device(_backend(backend), 0), owns_group=False, attempt=attempt)
    missing = [k for k in ("RANK", "MASTER_ADDR", "MASTER_PORT") if k not in os.environ]
    if missing:
        raise ValueError(
            f"WORLD_SIZE={world} but {missing} are not set: start with torchrun, or export RANK, "
            "MASTER_ADDR and MASTER_PORT on every rank"
        )
    rank = int(os.environ["RANK"])
    name = _backend(backend)
    # torchrun's agent hosts the store; a hand-set environment needs rank 0 to host it (as env:// would)
    agent_store = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
    store = dist.TCPStore(
        os.environ["MASTER_ADDR"],
        int(os.environ["MASTER_PORT"]),
        world_size=world,
        is_master=(not agent_store and rank == 0),
        timeout=timedelta(seconds=timeout_s),
        wait_for_workers=False,
    )
    prefixed = dist.PrefixStore(f"attempt_{attempt}", store)
    dist.init_process_group(
        name, store=prefixed, rank=rank, world_size=world, timeout=timedelta(seconds=timeout_s)
    )
    log.info("rank %d/%d joined (%s, attempt %d)", rank, world, name, attempt)
    return DistInfo(rank, world, _device(name, rank), owns_group=True, attempt=attempt)


def _device(backend: str, rank: int) -> torch.device:
    if backend == "nccl":
        local = int(os.environ.get("LOCAL_RANK", rank % max(1, torch.cuda.device_count())))
        torch.cuda.set_device(local)
        return torch.device("cuda", local)
    return torch.device("cpu")


def any_rank(flag: bool, info: DistInfo) -> bool:
    """True on every rank when ``flag`` is true on any rank (one 4-byte all-reduce; no-op in a single
    process).

    SIGTERM reaches ranks at different moments; deciding to stop through a collective makes every rank stop
    after the *same* step, so they all enter the checkpoint's collectives together instead of deadlocking.
    """
    if info.world_size == 1:
        return flag
    t = torch.tensor([1 if flag else 0], dtype=torch.int32, device=info.device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return bool(t.item())


def barrier(info: DistInfo) -> None:
    if info.world_size > 1:
        dist.barrier()


def broadcast_choice(value: Any, info: DistInfo) -> Any:
    """Rank 0's ``value`` on every rank (a picklable object; no-op in a single process).

    Used for the resume decision: on a shared filesystem with attribute caching (NFS, Lustre clients)
    ranks can
    see different directory listings for a while, so ranks that each scan for "the newest checkpoint" may pick
    different steps. One rank decides, everyone follows.
    """
    if info.world_size == 1:
        return value
    box = [value if info.rank == 0 else None]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def gather_reports(report: Any, info: DistInfo) -> list[Any]:
    """Every rank's ``report`` on every rank, in rank order (``all_gather_object``; ``[report]`` at world 1).

    Raises on the survivors when a rank died before reporting - the two-phase save's *prepare* vote."""
    if info.world_size == 1:
        return [report]
    out: list[Any] = [None] * info.world_size
    dist.all_gather_object(out, report)
    return out


def teardown(info: DistInfo) -> None:
    if info.owns_group and dist.is_initialized():
        dist.destroy_process_group()
