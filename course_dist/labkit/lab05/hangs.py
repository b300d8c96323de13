"""Planted hangs for exercise 1: six classic ways a job hangs and two where the culprit's stack is not at its
divergent call (it moved past an async one; it waits inside a helper), each ending as a ``LaunchTimeout``.

Every scenario is a rank function ``fn(culprit)`` run at world 3 (an odd one out needs a majority: at world 2
"which of the two is odd" has no answer from the trace alone). The line that plants the bug carries a
``# planted: <case>`` marker; ``truth(case, culprit)`` reads it back so the expected diagnosis (rank, seq, op,
line) is never typed by hand.

``plant(cases)`` launches all cases *concurrently* from threads (``launch`` is thread-safe: each launch hosts
its own store), so eight 3-second hangs cost about one timeout of wall time, not eight (measured warm, world
3 on 2 shared cores under load 13-18: 4.7-8.4 s for all eight).
"""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

WORLD = 3
CASES = ("extra_collective", "op_mismatch", "shape_mismatch", "conditional_barrier", "uneven_epoch",
         "ddp_unused")
# two more, where the culprit's stack is not its divergent call's line: it moved past an async call
# (async_extra), or it is stuck inside a helper the case's function called (ddp_uneven)
MORE_CASES = ("async_extra", "ddp_uneven")
ALL_CASES = CASES + MORE_CASES


def _grad_allreduce(model: nn.Module) -> None:
    for p in model.parameters():
        dist.all_reduce(p.grad)  # hand-rolled data parallelism: one traced collective per parameter


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))


def extra_collective(culprit: int) -> None:
    """One rank logs its loss with an all_reduce the others never make; they go on to the barrier."""
    loss = torch.ones(1) * dist.get_rank()
    if dist.get_rank() == culprit:
        dist.all_reduce(loss)  # planted: extra_collective
    dist.barrier()


def op_mismatch(culprit: int) -> None:
    """One rank believes it is the source of a broadcast while the others average the same tensor."""
    t = torch.ones(4)
    if dist.get_rank() == culprit:
        dist.broadcast(t, src=culprit)  # planted: op_mismatch
    else:
        dist.all_reduce(t)


def shape_mismatch(culprit: int) -> None:
    """One rank built its statistics buffer with a different size (say, a config read per rank)."""
    dist.all_reduce(torch.ones(2))
    stats = torch.zeros(6 if dist.get_rank() == culprit else 5)
    dist.all_reduce(stats)  # planted: shape_mismatch


def conditional_barrier(culprit: int) -> None:
    """A barrier inside ``if rank == ...`` (a "wait for the writer" that only one rank executes)."""
    t = torch.ones(3)
    dist.all_reduce(t)
    if dist.get_rank() == culprit:
        dist.barrier()  # planted: conditional_barrier
    dist.all_reduce(t)


def uneven_epoch(culprit: int) -> None:
    """The culprit's shard has one batch fewer: it leaves the loop and waits at the end-of-epoch barrier while
    the others are still averaging gradients."""
    model = _model()
    n_batches = 2 if dist.get_rank() == culprit else 3
    for i in range(n_batches):
        x = torch.randn(4, 4, generator=torch.Generator().manual_seed(i))
        model(x).square().mean().backward()
        _grad_allreduce(model)
    dist.barrier()  # planted: uneven_epoch


class _AuxNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.body = nn.Linear(4, 4)
        self.aux = nn.Linear(4, 1)

    def forward(self, x: torch.Tensor, use_aux: bool) -> torch.Tensor:
        y = self.body(x).square().mean()
        return y + self.aux(x).mean() if use_aux else y


def ddp_unused(culprit: int) -> None:
    """Under DDP (find_unused_parameters=False) only the culprit's graph uses ``aux``: it waits at the end of
    backward for a bucket the others never send, while they move on to log the loss."""
    # the loss is logged on its own group: on the same group as DDP's buckets the first mismatched message
    # aborts gloo (size check) instead of hanging, which hides the lesson
    log_group = dist.new_group(backend="gloo")
    model = nn.parallel.DistributedDataParallel(_AuxNet())
    x = torch.randn(8, 4, generator=torch.Generator().manual_seed(dist.get_rank()))
    loss = model(x, use_aux=dist.get_rank() == culprit)
    loss.backward()  # planted: ddp_unused
    dist.all_reduce(loss.detach(), group=log_group)


def _log_metrics(loss: torch.Tensor) -> None:
    """A logging helper that averages a metric without waiting for it (``async_op=True``)."""
    dist.all_reduce(loss, async_op=True)  # planted: async_extra


def async_extra(culprit: int) -> None:
    """The culprit alone logs its loss through a helper that starts an all_reduce with ``async_op=True`` and
    never waits for it: it moves past that call to the barrier everyone makes. Its stack (and its last
    collective) shows the barrier; its divergent call is the all_reduce. With CUDA tensors torch's docs say
    even a synchronous collective returns once enqueued, so there a rank's stack is usually past it."""
    loss = torch.ones(1) * dist.get_rank()
    if dist.get_rank() == culprit:
        _log_metrics(loss)
    dist.barrier()


def _train_step(model: nn.Module, x: torch.Tensor) -> None:
    model(x).square().mean().backward()  # planted: ddp_uneven


def ddp_uneven(culprit: int) -> None:
    """Uneven inputs under DDP: the culprit's shard holds one batch more. Its extra step waits in DDP's bucket
    all-reduce (C++, not traced) at the end of backward, inside the train-step helper, while the others log
    the epoch's loss on a group of their own."""
    log_group = dist.new_group(backend="gloo")
    model = nn.parallel.DistributedDataParallel(_model())
    for i in range(3 if dist.get_rank() == culprit else 2):
        _train_step(model, torch.randn(4, 4, generator=torch.Generator().manual_seed(i)))
    dist.all_reduce(torch.ones(1), group=log_group)


_SEQ = {  # the collective number (WORLD group) where the ranks first disagree
    "extra_collective": 0,
    "op_mismatch": 0,
    "shape_mismatch": 1,
    "conditional_barrier": 1,
    "uneven_epoch": 2 * 4,  # 2 batches x 4 parameters, then the culprit is at its barrier
    "ddp_unused": 0,  # DDP's own collectives run in C++ and are not traced: the log group's first one
    "async_extra": 0,
    "ddp_uneven": 0,  # as ddp_unused: the log group's first one
}
_OP = {  # what the culprit called at that number (None: it never got there)
    "extra_collective": "all_reduce",
    "op_mismatch": "broadcast",
    "shape_mismatch": "all_reduce",
    "conditional_barrier": "barrier",
    "uneven_epoch": "barrier",
    "ddp_unused": None,
    "async_extra": "all_reduce",
    "ddp_uneven": None,
}


def _marker_lines() -> dict[str, int]:
    src = Path(__file__).read_text(encoding="utf-8").splitlines()
    return {m.group(1): i + 1 for i, line in enumerate(src) if (m := re.search(r"# planted: (\w+)$", line))}


def truth(case: str, culprit: int) -> dict[str, Any]:
    """The diagnosis a correct ``diagnose`` returns for ``plant``'s result of (case, culprit)."""
    if case not in ALL_CASES:
        raise ValueError(f"case must be one of {ALL_CASES}, got {case!r}")
    if not 0 <= culprit < WORLD:
        raise ValueError(f"culprit must be a rank in [0, {WORLD}), got {culprit!r}")
    return {"rank": culprit, "seq": _SEQ[case], "op": _OP[case], "line": _marker_lines()[case]}


def _warm() -> None:
    return None


def _unsettled(err: BaseException | None) -> bool:
    """Some rank had not reached the scenario when the timeout fired (a loaded machine: still importing or
    joining the group), so the hang had not formed yet."""
    stacks = getattr(err, "stacks", None)
    if not stacks:
        return False
    finished = getattr(err, "finished", None) or []  # ranks that returned (the shape-mismatch survivors)
    return len(stacks) + len(finished) < WORLD or any(__file__ not in s for s in stacks.values())


def _run(case: str, culprit: int, timeout: float) -> BaseException | None:
    from course_dist import launch

    for attempt in range(3):  # retries, with 2x then 4x the time, if the ranks had not all started
        try:
            launch(globals()[case], WORLD, args=(culprit,), trace=True, timeout=timeout * 2**attempt,
                   stream=False)
        except BaseException as err:  # noqa: BLE001 - the outcome *is* the exception (LaunchTimeout expected)
            if attempt < 2 and _unsettled(err):
                continue
            return err
        return None
    return None


def plant(cases: list[tuple[str, int]], timeout: float = 3.0,
          parallel: int = 8) -> list[BaseException | None]:
    """Run each ``(case, culprit)`` at world 3 with ``trace=True``, ``parallel`` at once (one thread per
    launch); return what each raised (a ``LaunchTimeout``), in order. ``timeout``: the launcher's, seconds."""
    for case, culprit in cases:
        truth(case, culprit)  # validates both
    from course_dist import launch

    t0 = time.perf_counter()
    launch(_warm, 1, stream=False)  # the first launch starts the forkserver (seconds): not inside a timeout
    with ThreadPoolExecutor(max_workers=max(1, min(parallel, len(cases)))) as pool:
        out = list(pool.map(lambda c: _run(c[0], c[1], timeout), cases))
    _log_elapsed(len(cases), time.perf_counter() - t0)
    return out


def _log_elapsed(n: int, seconds: float) -> None:
    from course_dist._log import get_logger

    get_logger("course_dist.labkit.lab05").info("%d planted hangs diagnosed in %.1f s", n, seconds)


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    function: str


_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<fn>\S+)')
_LIBRARY = ("/torch/", "/multiprocessing/", "/threading.py", "<string>", "/course_dist/_")


def user_frames(stack: str) -> list[Frame]:
    """The frames of a ``LaunchTimeout.stacks[r]`` dump (innermost first) that are not torch's, Python's or
    the launcher's own: where *your* code was when the timeout fired."""
    if not isinstance(stack, str):
        raise TypeError(f"user_frames expects a stack dump string, got {type(stack).__name__}")
    main = re.split(r"\n(?=Thread 0x)", stack)[0]  # the current (main) thread's block comes first
    frames = [Frame(m["file"], int(m["line"]), m["fn"]) for m in _FRAME.finditer(main)]
    return [f for f in frames if not any(lib in f.file for lib in _LIBRARY)]
