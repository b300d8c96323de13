"""Lab 02 drills: the replica checker's test rank functions, the three planted contract bugs (stretch A), and
the kill drill of the solution card (what plain DDP does when a rank dies).

    course_dist.launch(lab02.bug_no_broadcast, world_size=2, args=(check_replicas,))   # -> [[1], [1]]
    lab02.kill_drill()                         # {"detect_s": seconds from the SIGKILL to the launch's report}
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from course_dist.labkit.lab02.model import ContractViolation, LabNet, make_model, model_config
from course_dist.labkit.lab02.train import sgd, shard


def _named(check: Callable, tensors: list[torch.Tensor], name: str = "parameters") -> list[int | str]:
    """The ranks ``check`` named (``[]``: it returned quietly). A violation naming no rank is not silence: it
    comes back as a marker, so that "identical replicas pass silently" can tell raising from returning."""
    try:
        check(name, tensors)
    except ContractViolation as exc:
        return list(exc.ranks) or ["raised ContractViolation naming no rank"]
    return []


def clean_check(check: Callable) -> list[int]:
    """Rank function: identical replicas (same seed everywhere); the checker must stay silent. Returns the
    ranks it named."""
    return _named(check, list(make_model(model_config("tiny"), seed=3).parameters()))


def one_ulp_check(check: Callable) -> list[int]:
    """Rank function: the last rank nudges one weight by one float32 ulp - replicas "close" but not equal."""
    model = make_model(model_config("tiny"), seed=3)
    if dist.get_rank() == dist.get_world_size() - 1:
        with torch.no_grad():
            w = model.head.weight
            w[0, 0] = torch.nextafter(w[0, 0], torch.tensor(math.inf, device=w.device))
    return _named(check, list(model.parameters()))


def bug_no_broadcast(check: Callable, seed: int = 0) -> list[int]:
    """Planted bug 1: each rank seeds its RNG with ``seed + rank`` (for per-rank augmentation) *before*
    building the model, and nobody broadcasts. Returns the ranks ``check`` named (``[]``: it saw nothing)."""
    torch.manual_seed(seed + dist.get_rank())  # the bug: rank-dependent seed, then model init
    return _named(check, list(LabNet(model_config("tiny")).parameters()))


def bug_skip_set_epoch(check: Callable, epochs: int = 3, n: int = 50) -> dict[str, Any]:
    """Planted bug 2: the last rank was restarted from a checkpoint that did not restore the epoch, so it
    never calls ``sampler.set_epoch(e)``. At the start of each epoch every rank checks its sampler state
    (seed, epoch): the first epoch where ``check`` raises and the ranks it names are returned, with the
    samples the job saw twice and never."""
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
    to the replica check's collective. Nobody can finish - a hang only a launcher timeout turns into a
    diagnosis."""
    cfg = model_config("tiny")
    model = make_model(cfg, seed)
    ddp = nn.parallel.DistributedDataParallel(model)
    x, y = shard(0, 8, cfg, seed)
    loss = nn.functional.cross_entropy(ddp(x, use_aux=dist.get_rank() == 0), y)  # the bug
    loss.backward()
    check("parameters", list(model.parameters()))
    return "finished"


def _kill_drill_rank(steps: int, kill_rank: int, kill_step: int, mark: str) -> int:
    import course_dist

    cfg = model_config("tiny")
    model = make_model(cfg, 0)
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = sgd(model)
    for step in range(steps):
        if step == kill_step and dist.get_rank() == kill_rank:
            # the wall-clock moment of death, written with one raw syscall just before the fault fires
            fd = os.open(mark, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.write(fd, repr(time.time()).encode())
            os.close(fd)
        course_dist.step(step)  # the fault plan fires here (SIGKILL of kill_rank at kill_step)
        x, y = shard(step, 8, cfg, 0)
        opt.zero_grad()
        nn.functional.cross_entropy(ddp(x, use_aux=True), y).backward()
        opt.step()
    return steps


def kill_drill(kill_step: int = 3, steps: int = 1000, timeout: float = 60.0) -> dict[str, Any]:
    """What plain DDP does when a rank dies: SIGKILL rank 1 at ``kill_step`` of a torch DDP job (world 2).
    ``detect_s`` is timed from the kill (written by the dying rank) to the moment ``launch`` reports it -
    start-up, DDP construction and the steps before the kill are not counted. Nothing recovers: the job
    stops."""
    from course_dist import Fault, RankError, launch

    with tempfile.TemporaryDirectory(prefix="lab02-kill-") as tmp:
        mark = os.path.join(tmp, "killed_at")
        t0 = time.time()
        try:
            launch(_kill_drill_rank, world_size=2, args=(steps, 1, kill_step, mark),
                   faults=[Fault("kill", rank=1, step=kill_step)], timeout=timeout, stream=False)
            outcome, rank = "finished (unexpected)", None
        except RankError as exc:
            outcome, rank = f"{type(exc).__name__}: {exc.signal_name or exc.exc_type}", exc.rank
        t_report = time.time()
        try:
            with open(mark) as f:
                t_kill = float(f.read())
        except (OSError, ValueError):
            t_kill = math.nan  # the rank never reached the kill step
    return {"killed rank": 1, "at step": kill_step, "reported rank": rank, "outcome": outcome,
            "detect_s": t_report - t_kill, "launch_to_report_s": t_report - t0,
            "steps completed by survivors": kill_step}


BUG3_ENDINGS = ("hang in backward", "collective mismatch")


def unused_param_outcome(exc: BaseException) -> str:
    """How bug 3's launch ended. ``"hang in backward"``: a LaunchTimeout with rank 0's stack in backward (its
    bucket all-reduce waits for rank 1, which moved on to the checker's collective: an all_gather never pairs
    with it). ``"collective mismatch"``: a RankError whose report carries gloo's size-mismatch diagnosis (a
    checker built on all_reduce pairs with rank 0's pending bucket all-reduce and gloo aborts; measured:
    "Received data size doesn't match expected size"). Anything else is described."""
    from course_dist import LaunchTimeout, RankError

    if isinstance(exc, LaunchTimeout):
        stack0 = exc.stacks.get(0, "")
        if "backward" in stack0:
            return BUG3_ENDINGS[0]
        return f"LaunchTimeout, rank 0 not in backward: {stack0[-300:]}"
    if isinstance(exc, RankError):
        text = "\n".join([str(exc), *(exc.stderr or [])])
        if "collective mismatch" in text or "doesn't match expected size" in text:
            return BUG3_ENDINGS[1]
        return f"RankError without a collective mismatch: {str(exc)[:300]}"
    return f"{type(exc).__name__}: {str(exc)[:300]}"
