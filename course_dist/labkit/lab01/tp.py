"""Tensor-parallel harnesses: the student's column -> row split of one MLP block against the dense block (on
every rank, no collective of ours, so the trace holds only the student's) and against torch's own
``ColwiseParallel`` / ``RowwiseParallel`` on the same weights.

Why compare locally on every rank: a check that all-reduces its own numbers would add collectives to the
trace that the exercise counts.
"""

from __future__ import annotations

import copy
import time
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from course_dist.labkit.lab01.model import Block


def _inputs(d_model: int, batch: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(batch, d_model, generator=g), torch.randn(batch, d_model, generator=g)


def _max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    if a.shape != b.shape:
        return float("inf")
    return float((a.detach() - b.detach()).abs().max()) if a.numel() else 0.0


def _dense(block: Block, x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    x = x.clone().requires_grad_(True)
    y = block(x)
    (y * w).sum().backward()
    return y.detach(), x.grad


LR = 0.5  # the SGD step the harnesses take on the TP parameters (and on the dense block, for the comparison)


def _held(col: nn.Module, row: nn.Module) -> dict[str, torch.Tensor]:
    return {
        "column.weight": col.weight,
        "column.bias": col.bias,
        "row.weight": row.weight,
        "row.bias": row.bias,
    }


def _after_step(dense: Block, col: nn.Module, row: nn.Module, x: torch.Tensor, sl: slice) -> dict[str, float]:
    """Which rank holds what, seen after an update (issue 34): this rank's parameters after one SGD step
    against the same slice of the dense block after the same step, and the TP block's output after it.

    A row bias kept as bias/N on every rank (or whole on rank 0, zero elsewhere) and added inside the
    all-reduce gives the dense output and gradients, but the optimizer moves every copy by the full gradient:
    the effective bias moves N times too far. Only the parameters, or the output after a step, show it."""
    stepped = copy.deepcopy(dense)
    with torch.no_grad():
        for p, q in zip(stepped.parameters(), dense.parameters(), strict=True):
            p -= LR * q.grad
        y_next = row(torch.relu(col(x)))  # the all-reduces here lie outside the counted window
    want = {
        "column.weight": stepped.up.weight[sl],
        "column.bias": stepped.up.bias[sl],
        "row.weight": stepped.down.weight[:, sl],
        "row.bias": stepped.down.bias,
    }
    got = _held(col, row)
    return {"output": _max_diff(y_next, stepped(x)), **{k: _max_diff(got[k], want[k]) for k in want}}


def tp_rank(
    column_cls: type,
    row_cls: type,
    d_model: int,
    d_hidden: int,
    batch: int = 8,
    seed: int = 0,
    steps: int = 1,
) -> dict[str, Any]:
    """On each rank: dense block vs the student's ``row_cls(dense.down)(relu(column_cls(dense.up)(x)))``.

    Returns max |diff| of the output, of the input gradient, and of each local weight/bias gradient against
    the matching slice of the dense gradient, plus the wall-clock window of the TP forward+backward.
    """
    r, n = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(seed)
    dense = Block(d_model, d_hidden)
    x, w = _inputs(d_model, batch, seed + 1)
    y_ref, gx_ref = _dense(dense, x, w)
    block = copy.deepcopy(dense)
    col, row = column_cls(block.up), row_cls(block.down)
    k = d_hidden // n
    t0 = time.time()
    for _ in range(steps):
        for p in (*col.parameters(), *row.parameters()):
            p.grad = None
        xt = x.clone().requires_grad_(True)
        y = row(torch.relu(col(xt)))
        (y * w).sum().backward()
    t1 = time.time()
    sl = slice(r * k, (r + 1) * k)
    ref = {
        "column.weight": dense.up.weight.grad[sl],
        "column.bias": dense.up.bias.grad[sl],
        "row.weight": dense.down.weight.grad[:, sl],
        "row.bias": dense.down.bias.grad,
    }
    got = {
        "column.weight": col.weight.grad,
        "column.bias": col.bias.grad,
        "row.weight": row.weight.grad,
        "row.bias": row.bias.grad,
    }
    grads = {name: (float("inf") if got[name] is None else _max_diff(got[name], ref[name])) for name in ref}
    # an optimizer step on the TP parameters must leave the dense layers they were built from untouched
    # (the shards are copies): a shard that is a view of the dense weight moves it, seen only after a step
    torch.optim.SGD([*col.parameters(), *row.parameters()], lr=LR).step()
    moved = max(_max_diff(p, q) for p, q in zip(block.parameters(), dense.parameters(), strict=True))
    return {
        "dense_moved": moved,
        "after_step": _after_step(dense, col, row, x, sl),
        "rank": r,
        "output": _max_diff(y, y_ref),
        "input_grad": float("inf") if xt.grad is None else _max_diff(xt.grad, gx_ref),
        "grads": grads,
        "shapes": {"column.weight": list(col.weight.shape), "row.weight": list(row.weight.shape)},
        "window": (t0, t1),
        "y_sum": float(y.detach().double().sum()),
    }


def torch_tp_rank(d_model: int, d_hidden: int, batch: int = 8, seed: int = 0) -> dict[str, Any]:
    """The same block under torch.distributed.tensor.parallel (Colwise -> Rowwise), same weights and data;
    returns its output, input gradient and local gradients (to compare with the student's on this rank)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    torch.manual_seed(seed)
    block = Block(d_model, d_hidden)
    x, w = _inputs(d_model, batch, seed + 1)
    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    parallelize_module(block, mesh, {"up": ColwiseParallel(), "down": RowwiseParallel()})
    xt = x.clone().requires_grad_(True)
    y = block(xt)
    (y * w).sum().backward()

    def local(t: torch.Tensor) -> torch.Tensor:
        return t.to_local() if hasattr(t, "to_local") else t

    grads = {
        k: local(g).clone()
        for k, g in (
            ("column.weight", block.up.weight.grad),
            ("column.bias", block.up.bias.grad),
            ("row.weight", block.down.weight.grad),
            ("row.bias", block.down.bias.grad),
        )
    }
    torch.optim.SGD(block.parameters(), lr=LR).step()  # what each rank holds after an update
    return {
        "stepped": {
            "column.weight": local(block.up.weight).detach(),
            "column.bias": local(block.up.bias).detach(),
            "row.weight": local(block.down.weight).detach(),
            "row.bias": local(block.down.bias).detach(),
        },
        "output": local(y).detach(),
        "input_grad": xt.grad.detach(),
        "grads": grads,
    }


def compare_rank(
    column_cls: type,
    row_cls: type,
    d_model: int,
    d_hidden: int,
    batch: int = 8,
    seed: int = 0,
    refuse: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """Student's TP block vs dense (``tp_rank``) and vs torch's TP (max |diff| per tensor), one launch; with
    ``refuse=(in, out)`` also ``refusals``: the ValueError messages of building each class from that
    Linear."""
    mine = tp_rank(column_cls, row_cls, d_model, d_hidden, batch, seed)
    if refuse is not None:
        mine["refusals"] = refuses(column_cls, row_cls, *refuse)
    torch.manual_seed(seed)
    block = copy.deepcopy(Block(d_model, d_hidden))
    x, w = _inputs(d_model, batch, seed + 1)
    col, row = column_cls(block.up), row_cls(block.down)
    xt = x.clone().requires_grad_(True)
    y = row(torch.relu(col(xt)))
    (y * w).sum().backward()
    theirs = torch_tp_rank(d_model, d_hidden, batch, seed)
    got = {
        "column.weight": col.weight.grad,
        "column.bias": col.bias.grad,
        "row.weight": row.weight.grad,
        "row.bias": row.bias.grad,
    }
    torch.optim.SGD([*col.parameters(), *row.parameters()], lr=LR).step()
    held = _held(col, row)
    mine["vs_torch"] = {
        "output": _max_diff(y, theirs["output"]),
        "input_grad": _max_diff(xt.grad, theirs["input_grad"]) if xt.grad is not None else float("inf"),
        **{k: (float("inf") if got[k] is None else _max_diff(got[k], theirs["grads"][k])) for k in got},
        **{f"{k} after an SGD step": _max_diff(held[k], theirs["stepped"][k]) for k in held},
    }
    return mine


def count_in_window(trace: Any, rank: int, window: tuple[float, float], op: str = "all_reduce") -> int:
    """Collectives ``op`` that rank ``rank`` started inside ``window`` (wall clock), from a launch trace."""
    t = trace[(trace["rank"] == rank) & (trace["op"] == op)]
    return int(((t["t_start"] >= window[0]) & (t["t_start"] <= window[1])).sum())


def time_tp_rank(
    column_cls: type | None, row_cls: type | None, d_model: int, d_hidden: int, batch: int, steps: int
) -> float:
    """Median seconds per forward+backward of one TP block: the student's classes, or torch's TP when
    ``column_cls`` is None (for the benchmark)."""
    import statistics

    torch.manual_seed(0)
    block = Block(d_model, d_hidden)
    x, w = _inputs(d_model, batch, 1)
    if column_cls is None:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

        mesh = init_device_mesh("cpu", (dist.get_world_size(),))
        fwd: nn.Module = parallelize_module(block, mesh, {"up": ColwiseParallel(), "down": RowwiseParallel()})
    else:
        col, row = column_cls(block.up), row_cls(block.down)
        fwd = nn.Sequential(col, nn.ReLU(), row)
    times = []
    for _ in range(steps + 1):
        dist.barrier()
        t0 = time.perf_counter()
        y = fwd(x.clone().requires_grad_(True))
        (y * w).sum().backward()
        times.append(time.perf_counter() - t0)
    t = torch.tensor([statistics.median(times[1:])])
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t)


def refuses(column_cls: type, row_cls: type, in_features: int, out_features: int) -> dict[str, str | None]:
    """On each rank: the ValueError message (or None) of building each class from ``nn.Linear(in, out)``;
    any other exception propagates (a RankError naming it)."""
    out: dict[str, str | None] = {}
    for name, cls in (("column", column_cls), ("row", row_cls)):
        try:
            cls(nn.Linear(in_features, out_features))
            out[name] = None
        except ValueError as exc:
            out[name] = str(exc)
    return out
