"""Lab 02 training loops the tests compare: naive, torch DDP, one process, bucketed; plus the collective
recorder and the small drills of exercise 4 (gradient accumulation, buffers, re-wrapping).

Every harness takes the student's function or class as an argument, so the same loop runs a student's answer,
the reference, or torch's own implementation side by side::

    course_dist.launch(lab02.train_naive, world_size=2, args=(average_gradients,))
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from course_dist.labkit.lab02.model import LabNet, global_batch, make_model, model_config

RECORDED = ("all_reduce", "broadcast", "all_gather")


@contextmanager
def record_collectives() -> Iterator[list[dict[str, Any]]]:
    """In a rank: record every ``dist.all_reduce`` / ``broadcast`` / ``all_gather`` call made through the
    ``torch.distributed`` namespace: ``{"op", "numel", "async_op", "t"}`` (t = time.perf_counter() at the
    call).

    Used by the structural tests of exercise 4 ("how many all-reduces did this backward launch, and when?"),
    independently of ``launch(trace=True)``, and with a clock shared with the test's own marks."""
    calls: list[dict[str, Any]] = []
    saved = {op: getattr(dist, op) for op in RECORDED}

    def wrap(op: str, fn: Callable) -> Callable:
        def wrapper(tensor: Any, *args: Any, **kwargs: Any) -> Any:
            t = tensor[0] if isinstance(tensor, list) else tensor
            calls.append({"op": op, "numel": int(t.numel()), "async_op": bool(kwargs.get("async_op", False)),
                          "t": time.perf_counter()})
            return fn(tensor, *args, **kwargs)

        return wrapper

    for op, fn in saved.items():
        setattr(dist, op, wrap(op, fn))
    try:
        yield calls
    finally:
        for op, fn in saved.items():
            setattr(dist, op, fn)


def sync_device() -> None:
    """Wait for queued CUDA work (no-op on CPU): time when work finished, not when it was queued."""
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def sgd(model: nn.Module) -> torch.optim.Optimizer:
    """The tests' optimizer. Momentum makes a wrong gradient compound over steps, so a small error becomes
    a visible one; weight decay moves every parameter that has a gradient - even a zero one - so a parameter
    that should have been left alone (unused everywhere: grad None) visibly changes if someone filled it
    with zeros."""
    return torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.05, momentum=0.9,
                           weight_decay=0.01)


def shard(step: int, batch: int, cfg: Any, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """This rank's rows of ``global_batch(step)`` (batch rows per rank), on the rank's device."""
    from course_dist import device

    r, w = dist.get_rank(), dist.get_world_size()
    x, y = global_batch(step, batch * w, cfg, seed)
    return x[r * batch:(r + 1) * batch].to(device()), y[r * batch:(r + 1) * batch].to(device())


def _use_aux(unused: str) -> bool:
    # "none": aux used everywhere; "all": aux unused on every rank; "rank0": used on rank 0 only.
    if unused not in ("none", "all", "rank0"):
        raise ValueError(f"unused must be 'none', 'all' or 'rank0', got {unused!r}")
    return {"none": True, "all": False, "rank0": dist.get_rank() == 0}[unused]


def _cpu_state(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}


def train_naive(average_gradients: Callable, steps: int = 4, batch: int = 8, seed: int = 0,
                unused: str = "all", size: str = "tiny") -> dict[str, torch.Tensor]:
    """Rank function: ``steps`` SGD steps, gradients synchronised by ``average_gradients(model)`` after
    backward. Returns the model's state dict (cpu) plus ``"aux_grad_is_none"``."""
    cfg = model_config(size)
    model = make_model(cfg, seed)  # same seed on every rank: replicas start equal without a broadcast
    opt = sgd(model)
    for step in range(steps):
        x, y = shard(step, batch, cfg, seed)
        opt.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(model(x, use_aux=_use_aux(unused)), y).backward()
        average_gradients(model)
        opt.step()
    out = _cpu_state(model)
    out["aux_grad_is_none"] = torch.tensor(model.aux.weight.grad is None)
    return out


def train_torch_ddp(steps: int = 4, batch: int = 8, seed: int = 0, unused: str = "all", size: str = "tiny",
                    accum: int = 1, use_no_sync: bool = True) -> dict[str, torch.Tensor]:
    """The same loop with ``torch.nn.parallel.DistributedDataParallel`` (the reference the lab matches).
    ``accum`` > 1: gradient accumulation over ``accum`` micro-batches, the first ``accum - 1`` under
    ``no_sync()`` when ``use_no_sync`` (otherwise every backward all-reduces)."""
    cfg = model_config(size)
    model = make_model(cfg, seed)
    ddp = nn.parallel.DistributedDataParallel(model, find_unused_parameters=unused != "none")
    opt = sgd(model)
    for step in range(steps):
        opt.zero_grad(set_to_none=True)
        for micro in range(accum):
            x, y = shard(step * accum + micro, batch, cfg, seed)
            ctx = ddp.no_sync() if use_no_sync and micro < accum - 1 else nullcontext()
            with ctx:
                nn.functional.cross_entropy(ddp(x, use_aux=_use_aux(unused)), y).backward()
        opt.step()
    return _cpu_state(model)


def train_single(world: int, steps: int = 4, batch: int = 8, seed: int = 0, unused: str = "all",
                 size: str = "tiny") -> dict[str, torch.Tensor]:
    """One process, the *global* batch (world * batch rows) per step: what data parallelism must reproduce."""
    cfg = model_config(size)
    torch.manual_seed(seed)
    model = LabNet(cfg)
    opt = sgd(model)
    for step in range(steps):
        x, y = global_batch(step, batch * world, cfg, seed)
        opt.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(model(x, use_aux=unused == "none"), y).backward()
        opt.step()
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def train_bucketed(ddp_cls: Callable, steps: int = 3, batch: int = 8, seed: int = 0, size: str = "tiny",
                   accum: int = 1, use_no_sync: bool = True, rewrap: bool = False,
                   bucket_cap_mb: float = 25.0, first_bucket_mb: float = 1.0) -> dict[str, Any]:
    """Rank function for exercise 4: train with ``ddp_cls(model, bucket_cap_mb=..., first_bucket_mb=...)``
    and record the structure of every micro-step: all-reduces launched, their sizes in launch order, how many
    had been launched when ``backward()`` returned, and whether they were async. ``rewrap``: wrap the model
    twice (the first wrapper is dropped; its hooks must not fire). Returns the state dict and the records."""
    cfg = model_config(size)
    model = make_model(cfg, seed)
    if rewrap:
        ddp_cls(model, bucket_cap_mb=bucket_cap_mb, first_bucket_mb=first_bucket_mb)
    ddp = ddp_cls(model, bucket_cap_mb=bucket_cap_mb, first_bucket_mb=first_bucket_mb)
    opt = sgd(model)
    records = []
    for step in range(steps):
        opt.zero_grad(set_to_none=True)
        for micro in range(accum):
            x, y = shard(step * accum + micro, batch, cfg, seed)
            last = micro == accum - 1
            sync = last or not use_no_sync
            with record_collectives() as calls, (nullcontext() if sync else ddp.no_sync()):
                loss = nn.functional.cross_entropy(ddp(x, use_aux=True), y)
                t0 = time.perf_counter()
                loss.backward()
                t_bwd, wall_bwd = time.perf_counter(), time.time()
                ars = [c for c in calls if c["op"] == "all_reduce"]
                n_at_bwd_end = len(ars)
                if last:
                    ddp.finish_gradient_synchronization()
            ars = [c for c in calls if c["op"] == "all_reduce"]
            records.append({"step": step, "micro": micro, "sync": sync, "n_calls": len(ars),
                            "numels": [c["numel"] for c in ars], "n_at_backward_end": n_at_bwd_end,
                            "all_async": all(c["async_op"] for c in ars),
                            "first_start_before_bwd_end": bool(ars) and ars[0]["t"] < t_bwd,
                            "bwd_s": t_bwd - t0, "t_backward_end_wall": wall_bwd})
        opt.step()
    return {"state": _cpu_state(model), "records": records}


def accumulation_toy(wrap: Callable | None = None, use_no_sync: bool = False) -> float:
    """Rank function: ``Linear(1, 1, bias=False)`` whose weight gradient is the input, two micro-batches
    (rank r feeds r + 1, then r + 11) and one optimizer-free read of ``weight.grad`` at the end.

    ``wrap(module)`` builds the wrapper (None: torch DDP). Without ``no_sync`` every backward all-reduces the
    accumulated gradient; torch DDP ends at world 2 with (1.5 + 11 + 1.5 + 12) / 2 = 13.0, with ``no_sync``
    on the first micro-batch ((1 + 11) + (2 + 12)) / 2 = 13.0 as well."""
    torch.manual_seed(0)
    from course_dist import device

    model = nn.Linear(1, 1, bias=False).to(device())
    ddp = nn.parallel.DistributedDataParallel(model) if wrap is None else wrap(model)
    r = dist.get_rank()
    for micro, value in enumerate((r + 1.0, r + 11.0)):
        ctx = ddp.no_sync() if use_no_sync and micro == 0 else nullcontext()
        with ctx:
            ddp(torch.tensor([[value]], device=device())).sum().backward()
    if hasattr(ddp, "finish_gradient_synchronization"):
        ddp.finish_gradient_synchronization()
    return float(model.weight.grad.item())


def run_all(calls: list[tuple[Callable, dict[str, Any]]]) -> list[Any]:
    """Rank function: ``[fn(**kwargs) for fn, kwargs in calls]`` in one launch. Each launch costs a few tenths
    of a second of start-up, so a test cell batches its rank functions into one (they run one after the other
    on the same process group; each builds its own model)."""
    return [fn(**kwargs) for fn, kwargs in calls]
