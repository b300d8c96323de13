"""FSDP2's prefetch, observed (issue 26 item 3): which blocks are gathered while each block computes, with
torch's implicit prefetch and with the student's explicit lists (``set_modules_to_forward_prefetch`` /
``set_modules_to_backward_prefetch``), and what one more unit in flight costs in step time, exposed
all-gather time and peak memory. Never a solution: the prefetch lists come in as ``set_prefetch``.

    course_dist.launch(lab03.prefetch_check, world_size=2, args=(set_prefetch, [None, 1, 2]), trace=True)

On CPU/gloo FSDP2 issues its all-gathers with ``async_op=False`` (no side streams on CPU), so a prefetch moves
an all-gather EARLIER but never runs it beside compute: every all-gather second stays exposed, and the extra
unit in flight only costs memory. On a GPU the same lists let the all-gather stream run under the compute
stream; these figures are not that.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import pandas as pd
import torch
import torch.distributed as dist
from torch import nn

import course_dist
from course_dist.labkit.lab03.fsdp_records import fsdp_records, prefetched
from course_dist.labkit.lab03.harness import BATCH, LR, WD, _loss
from course_dist.labkit.lab03.ledger import MemoryLedger, watch
from course_dist.labkit.lab03.model import make_model, param_dict
from course_dist.labkit.lab03.traffic import _select, record_single_collectives


def shard_blocks(model: nn.Module) -> list[nn.Module]:
    """FSDP2 per block (resharded after forward) and the root at torch's default; returns the blocks."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh(course_dist.device().type, (dist.get_world_size(),))
    for block in model.blocks:
        fully_shard(block, mesh=mesh, reshard_after_forward=True)
    fully_shard(model, mesh=mesh)
    return list(model.blocks)


def _group(block: nn.Module) -> Any:
    return block._get_fsdp_state()._fsdp_param_group  # torch internals: this module only reads them


def gathered(blocks: list[nn.Module]) -> list[int]:
    """Indices of the blocks whose parameters are gathered or whose all-gather is issued and not yet
    consumed (FSDP2's "in flight": a prefetched unit is the second kind until its own pre-forward)."""
    out = []
    for i, b in enumerate(blocks):
        g = _group(b)
        if g.is_unsharded or g._all_gather_result is not None:
            out.append(i)
    return out


class _NoLedger:
    """Stands in for the ledger when bytes are not measured: live bytes read as 0."""

    def __enter__(self) -> _NoLedger:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def current(self) -> int:
        return 0

    def live(self) -> int:
        return 0


def _observe(blocks: list[nn.Module], log: list[tuple[str, int, list[int], int]], order: list[str],
             ledger: MemoryLedger | _NoLedger) -> list[Any]:
    """Hooks inside each block (after FSDP2's own pre-forward / pre-backward hooks have run): log the
    gathered blocks when the block's forward compute starts (fc1's pre-hook) and when its backward compute
    starts (the gradient of fc2's output), with the ledger's live bytes then; keep FSDP2's own record of
    the post-forward order (the order its backward prefetch follows)."""
    handles = []
    for i, b in enumerate(blocks):
        def pre(_m: nn.Module, _a: Any, i: int = i) -> None:
            log.append(("forward", i, gathered(blocks), ledger.live()))

        def post(_m: nn.Module, _a: Any, out: torch.Tensor, i: int = i) -> None:
            if out.requires_grad:
                out.register_hook(lambda _g: _backward(i))

        def _backward(i: int) -> None:
            if not order:
                order.extend(g._module_fqn for g in _group(blocks[0]).comm_ctx.post_forward_order)
            log.append(("backward", i, gathered(blocks), ledger.live()))

        handles.append(b.fc1.register_forward_pre_hook(pre))
        handles.append(b.fc2.register_forward_hook(post))
    return handles


def _time_compute(blocks: list[nn.Module], compute: list[float]) -> list[Any]:
    """Seconds of each block's forward compute (fc1's pre-hook to fc2's hook: its gathers are before)."""
    handles = []
    for b in blocks:
        handles.append(b.fc1.register_forward_pre_hook(lambda *_: compute.append(-time.perf_counter())))
        handles.append(b.fc2.register_forward_hook(
            lambda *_: compute.append(compute.pop() + time.perf_counter())))
    return handles


def _build(set_prefetch: Callable | None, depth: int | None, seed: int,
           async_op: bool = False) -> tuple[nn.Module, list, Any]:
    model = make_model(seed).to(course_dist.device())
    blocks = shard_blocks(model)
    if depth is not None:  # None: torch's implicit prefetch (nothing set)
        set_prefetch(blocks, depth)
    if async_op:  # torch's private switch: all-gathers with async_op=True, run by gloo's own threads beside
        model._set_unshard_async_op(True)  # the compute (the one way to overlap on CPU); the bench only
    return model, blocks, torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WD)


def _step(model: nn.Module, opt: Any, step: int, seed: int, ledger: MemoryLedger | None = None) -> int:
    """One AdamW step; with ``ledger``, the peak live bytes of its forward and backward alone (the steady
    state's: what the units in flight add to, not the optimizer's lazy first allocation)."""
    opt.zero_grad(set_to_none=True)
    if ledger is not None:
        ledger.reset_peak()
    _loss(model, step, BATCH, seed).backward()
    peak = ledger.peak if ledger is not None else 0
    opt.step()
    return peak


def prefetch_run(set_prefetch: Callable | None, depth: int | None, steps: int = 2, seed: int = 0,
                 timed: int = 0, async_op: bool = False, ledger: bool = True) -> dict[str, Any]:
    """Inside a rank: ``steps`` AdamW steps of the lab model under FSDP2 per block with ``depth`` (None:
    implicit). Step 1 (after the lazy initialisation of step 0) is observed, and its forward and backward
    give ``peak_bytes`` on the memory ledger (``ledger=False``: no bytes, the live lists read 0); then,
    after one warm-up step, ``timed`` more steps without the ledger (``step_s``, ``block_forward_s``, their
    trace window ``timed_window``). Returns the gathered blocks per block and pass, FSDP2's post-forward
    order, the trace window of the ledger run, and the parameters."""
    record_single_collectives()
    log: list[tuple[str, int, list[int], int]] = []
    order: list[str] = []
    peak, peak_at = 0, ""
    # the ledger is a Python call on every op (~0.17 ms each, measured on CPU): ledger=False (the world-3
    # checks) observes without it
    with MemoryLedger() if ledger else _NoLedger() as book:
        model, blocks, opt = _build(set_prefetch, depth, seed, async_op)
        if ledger:
            watch(model, book)  # labels where the peak is reached (peak_at)
        t0 = time.time()
        records: list[str] = []
        for step in range(steps):
            handles = _observe(blocks, log, order, book) if step == 1 else []
            with fsdp_records(records if step == 1 else []):
                fb_peak = _step(model, opt, step, seed, book if step == 1 and ledger else None)
            peak, peak_at = (fb_peak, getattr(book, "peak_at", "")) if step == 1 else (peak, peak_at)
            for h in handles:
                h.remove()
        window = (t0, time.time())
    fwd = {i: g for kind, i, g, _ in log if kind == "forward"}
    bwd = {i: g for kind, i, g, _ in log if kind == "backward"}
    out = {"depth": depth, "forward": [fwd.get(i) for i in range(len(blocks))],
           "backward": [bwd.get(i) for i in range(len(blocks))], "order": order, "window": window,
           # the prefetches each block issued, in FSDP2's own record of the observed step
           "prefetched": prefetched(records, len(blocks)),
           "peak_bytes": peak, "peak_at": peak_at,
           # the ledger's live bytes as each block starts computing (index: block)
           "live_forward": [dict((i, b) for kind, i, _g, b in log if kind == "forward").get(i)
                            for i in range(len(blocks))],
           "live_backward": [dict((i, b) for kind, i, _g, b in log if kind == "backward").get(i)
                             for i in range(len(blocks))],
           "block_bytes": 4 * sum(p.numel() for p in blocks[0].parameters()),  # DTensor numel: global
           # multiply-adds of one block's two matmuls on this rank's slice of the batch, 2 FLOPs each
           "block_flops": 2 * (BATCH // dist.get_world_size()) * sum(
               m.weight.numel() for m in (model.blocks[0].fc1, model.blocks[0].fc2)),
           "params": param_dict(model)}
    if timed:
        _step(model, opt, steps, seed)  # warm-up outside the window: the first call of a fresh path is slow
        times, compute = [], []
        handles = _time_compute(blocks, compute)
        dist.barrier()
        t1 = time.time()
        for step in range(timed):
            s = time.perf_counter()
            _step(model, opt, steps + 1 + step, seed)
            times.append(time.perf_counter() - s)
        out["timed_window"], out["step_s"] = (t1, time.time()), statistics.median(times)
        out["block_forward_s"] = statistics.median(compute)
        for h in handles:
            h.remove()
    return out


def prefetch_check(set_prefetch: Callable, depths: list[int | None], steps: int = 2, seed: int = 0,
                   timed: int = 0, ledger: bool = True) -> list[dict[str, Any]]:
    """One launch: ``prefetch_run`` for each depth (each with its own trace window)."""
    return [prefetch_run(set_prefetch, d, steps, seed, timed, ledger=ledger) for d in depths]


def want_gathered(order: list[str], depth: int | None, kind: str) -> list[list[int]]:
    """What the prefetch lists should produce, from FSDP2's recorded post-forward order: while block k
    computes, blocks k..k+depth (forward) or k-depth..k (backward) in that order; implicit (None): forward
    nothing ahead, backward one behind (torch's default backward prefetch)."""
    chain = [int(n.split(".")[1]) for n in order if n.startswith("blocks.")]
    ahead = {"forward": 0 if depth is None else depth, "backward": 1 if depth is None else depth}[kind]
    out = [[] for _ in chain]
    for pos, i in enumerate(chain):
        near = chain[pos:pos + ahead + 1] if kind == "forward" else chain[max(pos - ahead, 0):pos + 1]
        out[i] = sorted(near)
    return out


def all_gather_s(trace: pd.DataFrame, rank: int, window: tuple[float, float], steps: int) -> float:
    """Seconds per step ``rank`` spent inside all-gather calls in ``window`` (the trace's t_end - t_start:
    blocking calls on CPU, so every one of them is exposed)."""
    sub = _select(trace, rank, window)
    sub = sub[sub["op"].isin(_AG)]
    return float((sub["t_end"].astype(float) - sub["t_start"].astype(float)).sum()) / steps


_AG = ("all_gather_single", "all_gather_into_tensor", "_all_gather_base")


def block_all_gather_s(trace: pd.DataFrame, rank: int, window: tuple[float, float], block_bytes: int,
                       world: int) -> float:
    """Median seconds of one block's all-gather in ``window`` (the calls whose gathered fp32 bytes are the
    block's within 10 %: FSDP2 pads each parameter's dim 0 to a multiple of the world; the root's calls are
    another size)."""
    sub = _select(trace, rank, window)
    sub = sub[sub["op"].isin(_AG)]
    gathered_bytes = sub["shape"].map(lambda s: 4 * world * int(torch.Size(s).numel()))
    sub = sub[(gathered_bytes - block_bytes).abs() <= 0.1 * block_bytes]
    if sub.empty:
        raise ValueError(f"no all-gather of a block ({block_bytes} bytes) in the window")
    return float((sub["t_end"].astype(float) - sub["t_start"].astype(float)).median())


def _extra(run: dict[str, Any], base: dict[str, Any], key: str) -> float:
    """The most live bytes ``run`` holds above ``base`` as the same block starts computing, in blocks."""
    return max(a - b for a, b in zip(run[key], base[key], strict=True)) / run["block_bytes"]


def overlap_table(runs: list[dict[str, Any]], trace: pd.DataFrame,
                  fits: dict[str, tuple[float, float]] | None, timed: int) -> pd.DataFrame:
    """One row per depth (rank 0): step time, exposed all-gather time, ledger peak and its growth over the
    implicit run (runs measured with the ledger); and the Playbook's overlap condition per block: forward
    compute time >= one block's all-gather time (measured from the trace, and predicted from the fit when
    ``fits`` is given)."""
    from course_dist.labkit.lab01 import ring_constants

    base = runs[0]
    world = dist.get_world_size() if dist.is_initialized() else int(trace["rank"].max()) + 1
    rows = []
    for r in runs:
        ag = all_gather_s(trace, 0, r["timed_window"], timed)
        row = {"prefetch": "implicit" if r["depth"] is None else f"explicit, depth {r['depth']}",
               "step_s": r["step_s"], "x implicit step": r["step_s"] / base["step_s"],
               "all_gather_s_per_step (exposed)": ag,
               "block_forward_s": r["block_forward_s"],
               "block_GFLOP_per_s": r["block_flops"] / r["block_forward_s"] / 1e9,
               "block_all_gather_s (trace)": block_all_gather_s(trace, 0, r["timed_window"], r["block_bytes"],
                                                                world)}
        if r["peak_bytes"]:  # measured on the ledger (prefetch_run(..., ledger=True))
            row.update({"peak_bytes": r["peak_bytes"],
                        "extra peak / block bytes": (r["peak_bytes"] - base["peak_bytes"]) / r["block_bytes"],
                        "extra live in forward / block bytes": _extra(r, base, "live_forward"),
                        "extra live in backward / block bytes": _extra(r, base, "live_backward")})
        if fits and "all_gather" in fits:
            alpha, beta = fits["all_gather"]
            steps_n, bus = ring_constants("all_gather", world)
            row["block_all_gather_s (fit)"] = steps_n * alpha + bus * r["block_bytes"] * beta
            row["compute >= comm (fit)"] = r["block_forward_s"] >= row["block_all_gather_s (fit)"]
        rows.append(row)
    return pd.DataFrame(rows)
