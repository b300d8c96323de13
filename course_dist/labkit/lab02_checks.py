"""Lab 02 checks: the rank functions behind the tests of exercises 2, 4 and 6, and the three planted bugs.

Each takes the student's function as its argument and runs inside a rank::

    course_dist.launch(lab02.bug_no_broadcast, world_size=2, args=(check_replicas,))   # -> [[1], [1]]

Under torchrun, call them from a module of your own that passes the checker (``-m course_dist.run mymod:fn``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from course_dist.labkit.lab02_core import (
    ContractViolation,
    LabNet,
    _sgd,
    _shard,
    make_model,
    model_config,
    state_fingerprint,
)


def broadcast_check(broadcast_model: Callable, src: int = 0) -> dict[str, Any]:
    """Rank function: seed differently per rank, build the model, fingerprint, ``broadcast_model(model,
    src)``, fingerprint again; also whether the parameter/buffer objects are the same ones (in-place update).
    """
    torch.manual_seed(100 + dist.get_rank())
    model = make_model(model_config("tiny"), seed=100 + dist.get_rank())
    before, ids = state_fingerprint(model), [id(t) for t in [*model.parameters(), *model.buffers()]]
    broadcast_model(model, src)
    same = ids == [id(t) for t in [*model.parameters(), *model.buffers()]]
    return {"before": before, "after": state_fingerprint(model), "same_objects": same}


def ring_input(n: int, rank: int) -> torch.Tensor:
    """Rank ``rank``'s input of length ``n`` for the ring tests (float32, deterministic)."""
    return torch.randn(n, generator=torch.Generator().manual_seed(1000 * rank + n))


def ring_check(ring_all_reduce: Callable, lengths: list[int]) -> dict[int, torch.Tensor]:
    """Rank function: run ``ring_all_reduce`` on ``ring_input(n, rank)`` for each length with
    ``dist.all_reduce`` disabled (the point is to build it from send/recv). Returns ``{n: result (cpu)}``;
    also checks that it works in place."""
    from course_dist import device

    def forbidden(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("ring_all_reduce must use send/recv, not dist.all_reduce")

    saved, dist.all_reduce = dist.all_reduce, forbidden
    try:
        out = {}
        for n in lengths:
            t = ring_input(n, dist.get_rank()).to(device())
            res = ring_all_reduce(t)
            if res is not None and res.data_ptr() != t.data_ptr() and n:
                raise AssertionError(f"length {n}: ring_all_reduce must work in place and return its input")
            out[n] = t.cpu()
    finally:
        dist.all_reduce = saved
    return out


def clean_check(check: Callable) -> list[int]:
    """Rank function: identical replicas (same seed everywhere); the checker must stay silent. Returns named
    ranks."""
    model = make_model(model_config("tiny"), seed=3)
    try:
        check("parameters", list(model.parameters()))
    except ContractViolation as exc:
        return exc.ranks
    return []


def one_ulp_check(check: Callable) -> list[int]:
    """Rank function: the last rank nudges one weight by one float32 ulp - replicas "close" but not equal."""
    model = make_model(model_config("tiny"), seed=3)
    if dist.get_rank() == dist.get_world_size() - 1:
        with torch.no_grad():
            w = model.head.weight
            w[0, 0] = torch.nextafter(w[0, 0], torch.tensor(math.inf, device=w.device))
    try:
        check("parameters", list(model.parameters()))
    except ContractViolation as exc:
        return exc.ranks
    return []


def bug_no_broadcast(check: Callable, seed: int = 0) -> list[int]:
    """Planted bug 1: each rank seeds its RNG with ``seed + rank`` (for per-rank augmentation) *before*
    building the model, and nobody broadcasts. ``check("parameters", model.parameters())`` must name the
    diverged ranks. Returns the ranks named (``[]`` if the checker saw nothing)."""
    torch.manual_seed(seed + dist.get_rank())  # the bug: rank-dependent seed, then model init
    model = LabNet(model_config("tiny"))
    try:
        check("parameters", list(model.parameters()))
    except ContractViolation as exc:
        return exc.ranks
    return []


def bug_skip_set_epoch(check: Callable, epochs: int = 3, n: int = 50) -> dict[str, Any]:
    """Planted bug 2: the last rank was restarted from a checkpoint that did not restore the epoch, so it
    never calls ``sampler.set_epoch(e)``. At the start of each epoch every rank checks its sampler state
    (seed, epoch):
    the first epoch where ``check`` raises and the ranks it names are returned, with the samples the job saw
    twice."""
    from torch.utils.data import DistributedSampler

    from course_dist import device

    r, w = dist.get_rank(), dist.get_world_size()
    sampler = DistributedSampler(range(n), num_replicas=w, rank=r, shuffle=True, seed=0)
    for epoch in range(epochs):
        if r != w - 1:  # the bug: the restarted last rank skips set_epoch
            sampler.set_epoch(epoch)
        try:
            check("sampler state", [torch.tensor([sampler.seed, sampler.epoch], dtype=torch.float64)])
        except ContractViolation as exc:
            mine = torch.zeros(n, device=device())  # on the rank's device: NCCL reduces GPU tensors only
            mine[list(sampler)] = 1
            dist.all_reduce(mine)  # how many ranks saw each sample this epoch
            return {"epoch": epoch, "ranks": exc.ranks, "seen twice": int((mine > 1).sum()),
                    "never seen": int((mine == 0).sum())}
    return {"epoch": None, "ranks": [], "seen twice": 0, "never seen": 0}


def bug_unused_param(check: Callable, seed: int = 0) -> str:
    """Planted bug 3: rank 0 adds an auxiliary loss (uses ``aux``), the others do not, under torch DDP with
    the default ``find_unused_parameters=False``. The other ranks never mark ``aux`` ready, so the bucket
    holding it is never all-reduced there: rank 0 waits for it at the end of backward while the others move on
    to the replica check's collective. Nobody can finish - a hang that only a launcher timeout turns into a
    diagnosis."""
    cfg = model_config("tiny")
    model = make_model(cfg, seed)
    ddp = nn.parallel.DistributedDataParallel(model)
    x, y = _shard(0, 8, cfg, seed)
    # the bug: a rank-dependent graph
    loss = nn.functional.cross_entropy(ddp(x, use_aux=dist.get_rank() == 0), y)
    loss.backward()
    check("parameters", list(model.parameters()))
    return "finished"


def _kill_drill_rank(steps: int) -> int:
    import course_dist

    cfg = model_config("tiny")
    model = make_model(cfg, 0)
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = _sgd(model)
    for step in range(steps):
        course_dist.step(step)  # the fault plan fires here
        x, y = _shard(step, 8, cfg, 0)
        opt.zero_grad()
        nn.functional.cross_entropy(ddp(x, use_aux=True), y).backward()
        opt.step()
    return steps


def kill_drill(kill_step: int = 3, steps: int = 1000) -> dict[str, Any]:
    """What plain DDP does when a rank dies: SIGKILL rank 1 at ``kill_step`` of a torch DDP job (world 2) and
    time how long until the launch reports it. Nothing recovers: the whole job stops."""
    from course_dist import Fault, RankError, launch

    t0 = time.perf_counter()
    try:
        launch(_kill_drill_rank, world_size=2, args=(steps,), faults=[Fault("kill", rank=1, step=kill_step)],
               timeout=60, stream=False)
        outcome, rank = "finished (unexpected)", None
    except RankError as exc:
        outcome, rank = f"{type(exc).__name__}: {exc.signal_name or exc.exc_type}", exc.rank
    return {"killed rank": 1, "at step": kill_step, "reported rank": rank, "outcome": outcome,
            "detect_s": time.perf_counter() - t0, "steps completed by survivors": kill_step}
