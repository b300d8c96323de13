"""Rank functions behind lab 03's tests: each trains the lab model a few AdamW steps with the STUDENT's
pieces (passed in as arguments) and returns final parameters, memory and byte counts. Never a solution.

    course_dist.launch(lab03.train_zero, world_size=2, args=(ShardedAdamW,), trace=True)
    lab03.train_single(steps=3)          # the oracle: one process, global batch, torch AdamW

Every run uses the same seed on every rank (identical init, no broadcast) and splits one global batch of
``batch`` samples into contiguous per-rank slices, so "equal to one process" is a well-posed check.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

import course_dist
from course_dist.labkit.lab03.guards import backward_or_explain, check_shard
from course_dist.labkit.lab03.ledger import (
    MemoryLedger,
    optimizer_state_bytes,
    tensor_bytes,
    untracked,
    watch,
)
from course_dist.labkit.lab03.model import (
    flatten,
    local_batch,
    make_model,
    param_dict,
    unflatten_into,
    wrap_policy,
)
from course_dist.labkit.lab03.traffic import record_single_collectives

LR, WD = 1e-2, 0.01
BATCH = 12  # global batch: divides by 1, 2, 3 and 4


def _loss(model: nn.Module, step: int, batch: int, seed: int, size: str = "lab") -> torch.Tensor:
    world = dist.get_world_size() if dist.is_initialized() else 1
    rank = dist.get_rank() if dist.is_initialized() else 0
    x, y = local_batch(step, batch, world, rank, seed, size)
    dev = course_dist.device() if dist.is_initialized() else torch.device("cpu")
    return F.cross_entropy(model(x.to(dev)), y.to(dev))


def train_single(steps: int = 3, batch: int = BATCH, seed: int = 0, size: str = "lab",
                 grads: bool = False) -> dict[str, Any]:
    """One process, global batch, torch AdamW: the parameters (and last gradients) every sharding must
    match."""
    model = make_model(seed, size)
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WD)
    last, first = {}, {}
    for step in range(steps):
        opt.zero_grad(set_to_none=True)
        x, y = local_batch(step, batch, 1, 0, seed, size)
        F.cross_entropy(model(x), y).backward()
        last = {n: p.grad.detach().clone() for n, p in model.named_parameters()}
        first = first or last
        opt.step()
    return {"params": param_dict(model), "grads": last if grads else None, "grads0": first}


def _average_(params: list[nn.Parameter]) -> None:
    """DDP's averaging (what ZeRO-1 starts from): all-reduce the gradients (one flat bucket, as DDP's buckets
    do: one latency instead of one per parameter) and divide by the world size."""
    world = dist.get_world_size()
    flat = flatten([p.grad for p in params])
    dist.all_reduce(flat)
    flat.div_(world)
    unflatten_into(flat, [p.grad for p in params])


def _import_zero_redundancy() -> Any:
    """``torch.distributed.optim`` TorchScript-compiles its functional optimizers on import: ~1 s quiet, 10 s
    on a busy 2-core box. Scripting is irrelevant here, so import it with TorchScript off."""
    import torch.jit._state as jit_state

    jit_state.disable()
    try:
        from torch.distributed.optim import ZeroRedundancyOptimizer
    finally:
        jit_state.enable()
    return ZeroRedundancyOptimizer


def train_zero(opt_cls: Callable, steps: int = 3, batch: int = BATCH, seed: int = 0) -> dict[str, Any]:
    """ZeRO-1 with the student's ``opt_cls(params, torch.optim.AdamW, lr=, weight_decay=)`` under the memory
    ledger: ``zero_grad``, backward, ``opt.step()`` (which reduces the gradients itself: no all-reduce here);
    the wrapped torch optimizer must be ``.optimizer``."""
    record_single_collectives()
    with MemoryLedger() as ledger:
        model = make_model(seed).to(course_dist.device())
        params = list(model.parameters())
        opt = opt_cls(params, torch.optim.AdamW, lr=LR, weight_decay=WD)
        steady = []
        t0 = time.time()
        for step in range(steps):
            opt.zero_grad()
            _loss(model, step, batch, seed).backward()
            opt.step()
            steady.append(ledger.mark("after step", collect=True))
        window = (t0, time.time())
        peak = ledger.peak
    inner = getattr(opt, "optimizer", None)
    if not isinstance(inner, torch.optim.Optimizer):
        raise TypeError(f"{opt_cls.__name__} must keep its torch optimizer in .optimizer, got {type(inner)}")
    return {"params": param_dict(model), "optimizer_bytes": optimizer_state_bytes(inner), "window": window,
            "numel": sum(p.numel() for p in params), "peak_bytes": peak, "steady_bytes": max(steady),
            "peak_at": ledger.peak_at}


def train_zero2(reduce_fn: Callable, steps: int = 3, batch: int = BATCH, seed: int = 0) -> dict[str, Any]:
    """ZeRO-2's gradient path with the student's ``reduce_fn(params) -> averaged gradient chunk`` (padded to
    ``ceil(numel / world)``). To test it alone (without exercise 1's optimizer) the harness all-gathers the
    chunks back into full gradients and runs torch AdamW: the same bytes as ZeRO-2's parameter all-gather."""
    record_single_collectives()
    with MemoryLedger() as ledger:
        model = make_model(seed).to(course_dist.device())
        params = list(model.parameters())
        world = dist.get_world_size()
        chunk = -(-sum(p.numel() for p in params) // world)
        opt = torch.optim.AdamW(params, lr=LR, weight_decay=WD)
        grad_bytes, after_reduce = [], []
        t0 = time.time()
        for step in range(steps):
            opt.zero_grad(set_to_none=True)
            _loss(model, step, batch, seed).backward()
            shard = reduce_fn(params)
            # what is still held as gradient after the reduction: full grads (should be gone) + the shard
            grad_bytes.append(tensor_bytes([p.grad for p in params if p.grad is not None] + [shard]))
            after_reduce.append(ledger.mark("after the reduction", collect=True))
            if shard.numel() != chunk:
                raise ValueError(f"reduce_scatter_grads returned {shard.numel()} elements, want {chunk}")
            with untracked():  # the test's rebuilding of full gradients is not ZeRO-2's memory
                full = shard.new_empty(chunk * world)
                dist.all_gather_single(full, shard.contiguous())
                grads = [torch.empty_like(p) for p in params]
                unflatten_into(full, grads)
                if step == 0:  # AdamW is nearly blind to a constant factor on the gradient: compare them too
                    names = [n for n, _p in model.named_parameters()]
                    grads0 = {n: g.clone() for n, g in zip(names, grads, strict=True)}
            del shard
            for p, g in zip(params, grads, strict=True):
                p.grad = g
            del full, grads
            opt.step()
        window = (t0, time.time())
        peak = ledger.peak
    return {"params": param_dict(model), "grad_bytes": max(grad_bytes), "window": window, "grads0": grads0,
            "peak_bytes": peak, "after_reduce_bytes": max(after_reduce)}


def train_ddp(steps: int = 3, batch: int = BATCH, seed: int = 0) -> dict[str, Any]:
    """DDP's arithmetic without DDP: all-reduce-average every gradient, full torch AdamW on every rank (the
    replicated baseline its bytes and memory are measured against), under the memory ledger."""
    with MemoryLedger() as ledger:
        model = make_model(seed).to(course_dist.device())
        params = list(model.parameters())
        opt = torch.optim.AdamW(params, lr=LR, weight_decay=WD)
        steady, after_reduce = [], []
        t0 = time.time()
        for step in range(steps):
            opt.zero_grad(set_to_none=True)
            _loss(model, step, batch, seed).backward()
            _average_(params)
            grad_bytes = tensor_bytes([p.grad for p in params])
            after_reduce.append(ledger.mark("after the reduction", collect=True))
            if step == 0:
                with untracked():
                    grads0 = {n: p.grad.detach().clone() for n, p in model.named_parameters()}
            opt.step()
            steady.append(ledger.mark("after step", collect=True))
        window = (t0, time.time())
        peak = ledger.peak
    return {"params": param_dict(model), "optimizer_bytes": optimizer_state_bytes(opt),
            "grad_bytes": grad_bytes, "window": window, "peak_bytes": peak, "grads0": grads0,
            "steady_bytes": max(steady), "after_reduce_bytes": max(after_reduce)}


def train_zero_redundancy(steps: int = 3, batch: int = BATCH, seed: int = 0) -> dict[str, Any]:
    """torch's ZeRO-1, ``ZeroRedundancyOptimizer(AdamW)`` (partitions whole parameters, not a flat vector)
    after DDP's all-reduce, under the same ledger and loop as ``train_zero``."""
    ZeroRedundancyOptimizer = _import_zero_redundancy()  # noqa: N806 - a class
    with MemoryLedger() as ledger:
        model = make_model(seed).to(course_dist.device())
        params = list(model.parameters())
        opt = ZeroRedundancyOptimizer(params, optimizer_class=torch.optim.AdamW, lr=LR, weight_decay=WD)
        steady = []
        t0 = time.time()
        for step in range(steps):
            opt.zero_grad()
            _loss(model, step, batch, seed).backward()
            _average_(params)
            opt.step()
            steady.append(ledger.mark("after step", collect=True))
        window = (t0, time.time())
        peak = ledger.peak
    return {"params": param_dict(model), "optimizer_bytes": optimizer_state_bytes(opt.optim),
            "peak_bytes": peak, "steady_bytes": max(steady), "window": window, "peak_at": ledger.peak_at}


def shard_model(model: nn.Module, policy: str | list[str], unit_cls: Callable, attach: Callable,
                names_out: list[str] | None = None) -> list[Any]:
    """Build one ``unit_cls(params)`` per wrap unit (deepest first, so a unit owns only parameters no inner
    unit claimed; the root takes the rest) and call ``attach(module, unit)`` on each. Returns the units
    (their module names appended to ``names_out``, the root as ``""``)."""
    names = wrap_policy(model, policy)
    claimed: set[int] = set()
    units = []
    for name in sorted(names, key=lambda n: -n.count(".")) + [""]:
        module = model.get_submodule(name)
        params = [p for p in module.parameters() if id(p) not in claimed]
        if not params:
            continue  # e.g. the root under the "linear" policy
        claimed.update(id(p) for p in params)
        unit = unit_cls(params)
        check_shard(unit, name)  # a shard that is a view of the freed buffer: a message, not a SIGSEGV
        attach(module, unit)
        units.append(unit)
        if names_out is not None:
            names_out.append(name)
    return units



def _zero3_params(model: nn.Module, units: list[Any]) -> dict[str, torch.Tensor]:
    with torch.no_grad():
        for u in units:
            u.gather()
        out = param_dict(model)
        for u in units:
            u.free()
    return out


def train_zero3(unit_cls: Callable, attach: Callable, policy: str | list[str] = "block", steps: int = 3,
                batch: int = BATCH, seed: int = 0) -> dict[str, Any]:
    """ZeRO-3 by hand with the student's unit class and hooks, under a memory ledger."""
    record_single_collectives()
    with MemoryLedger() as ledger:
        model = make_model(seed).to(course_dist.device())
        names: list[str] = []
        units = shard_model(model, policy, unit_cls, attach, names)
        opt = torch.optim.AdamW([u.shard for u in units], lr=LR, weight_decay=WD)
        watch(model, ledger)
        ledger.mark("built")
        steady, after_forward = [], []
        t0 = time.time()
        for step in range(steps):
            loss = _loss(model, step, batch, seed)
            after_forward.append(ledger.mark("forward done, backward next", collect=True))
            backward_or_explain(loss, model, units, names)
            del loss
            ledger.mark("backward done")
            if step == 0:  # AdamW is nearly blind to a constant factor on the gradient: compare gradients too
                with untracked():
                    shard_grads0 = [None if u.shard.grad is None else u.shard.grad.detach().clone()
                                    for u in units]
            opt.step()
            for u in units:
                u.shard.grad = None
            steady.append(ledger.mark("after step", collect=True))
        result = {"peak_bytes": ledger.peak, "peak_at": ledger.peak_at, "steady_bytes": max(steady),
                  "units": len(units), "largest_unit": max(u_numel(u) for u in units), "policy": str(policy),
                  "after_forward_bytes": max(after_forward),
                  "window": (t0, time.time())}
    result["params"] = _zero3_params(model, units)  # after the window: its gathers are not the training's
    result["grads0"] = _zero3_grads(model, units, shard_grads0)
    return result


def _zero3_grads(model: nn.Module, units: list[Any], shards: list[torch.Tensor | None]) -> dict[str, Any]:
    """The full first-step gradients, all-gathered from every rank's shard grads (after the trace window)."""
    names = {id(p): n for n, p in model.named_parameters()}
    out = {}
    for u, g in zip(units, shards, strict=True):
        g = torch.zeros_like(u.shard) if g is None else g
        full = g.new_empty(g.numel() * dist.get_world_size())
        dist.all_gather_single(full, g.contiguous())
        grads = [torch.empty(p.shape) for p in u.params]
        unflatten_into(full, grads)
        out.update({names[id(p)]: t for p, t in zip(u.params, grads, strict=True)})
    return out


def u_numel(unit: Any) -> int:
    return sum(p.numel() for p in unit.params)


def _full(t: torch.Tensor) -> torch.Tensor:
    return t.full_tensor() if hasattr(t, "full_tensor") else t


def train_fsdp2(apply_fsdp2: Callable, policy: str | list[str] = "block", reshard: bool = True,
                steps: int = 3,
                batch: int = BATCH, seed: int = 0, summed: bool = False) -> dict[str, Any]:
    """torch FSDP2 applied by the student's ``apply_fsdp2(model, names, reshard_after_forward)``, under the
    same ledger. ``summed=True`` plants the upstream gloo bug (gradients summed, not averaged)."""
    record_single_collectives()
    with MemoryLedger() as ledger:
        model = make_model(seed).to(course_dist.device())
        names = wrap_policy(model, policy)
        model = apply_fsdp2(model, names, reshard) or model
        opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WD)
        watch(model, ledger)
        ledger.mark("built")
        steady, last = [], {}
        t0 = time.time()
        for step in range(steps):
            opt.zero_grad(set_to_none=True)
            loss = _loss(model, step, batch, seed)
            loss.backward()
            del loss
            if summed:  # the upstream bug's effect: every gradient world x too large (summed, not averaged).
                # (set_gradient_divide_factor(1.0) would plant it inside FSDP2, but gloo has no PREMUL_SUM.)
                for p in model.parameters():
                    p.grad.mul_(dist.get_world_size())
            ledger.mark("backward done")
            if step == steps - 1:
                with untracked():  # the test's copy of the gradients is not the training's memory
                    last = {n: _full(p.grad).detach().clone()
                            for n, p in model.named_parameters() if p.grad is not None}
            opt.step()
            opt.zero_grad(set_to_none=True)
            steady.append(ledger.mark("after step", collect=True))
        result = {"peak_bytes": ledger.peak, "peak_at": ledger.peak_at, "steady_bytes": max(steady),
                  "policy": str(policy), "reshard": reshard, "summed": summed, "window": (t0, time.time())}
    result["params"] = param_dict(model)
    result["grads"] = last
    result["sharded"] = sum(hasattr(p, "to_local") for p in model.parameters())
    return result


def zero3_check(unit_cls: Callable, attach: Callable, policies: list[str], steps: int = 3,
                batch: int = BATCH, seed: int = 0) -> list[dict[str, Any]]:
    """One launch, several wrap policies: ``train_zero3`` for each (each with its own window in the trace)."""
    return [train_zero3(unit_cls, attach, p, steps, batch, seed) for p in policies]


def fsdp2_check(apply_fsdp2: Callable, configs: list[dict[str, Any]], steps: int = 3, batch: int = BATCH,
                seed: int = 0) -> dict[str, Any]:
    """One launch: the DDP baseline (bytes to compare with), then several FSDP2 configurations
    (``{"policy", "reshard", "summed"}`` dicts)."""
    runs = [train_fsdp2(apply_fsdp2, c.get("policy", "block"), c.get("reshard", True), steps, batch, seed,
                        c.get("summed", False)) for c in configs]
    return {"ddp": train_ddp(steps, batch, seed), "runs": runs}


def zero1_check(opt_cls: Callable, steps: int = 3, batch: int = BATCH, seed: int = 0) -> dict[str, Any]:
    """One launch: the DDP baseline, your ZeRO-1 and torch's ZeroRedundancyOptimizer, one after the other,
    then parameters used on some ranks only (``rank_use.zero1_rank_use``, after the traced windows)."""
    from course_dist.labkit.lab03.rank_use import zero1_rank_use

    return {"ddp": train_ddp(steps, batch, seed), "yours": train_zero(opt_cls, steps, batch, seed),
            "torch": train_zero_redundancy(steps, batch, seed),
            "rank_use": zero1_rank_use(opt_cls, steps, seed)}


def zero2_check(reduce_fn: Callable, steps: int = 3, batch: int = BATCH, seed: int = 0) -> dict[str, Any]:
    """One launch: the DDP baseline, then your ZeRO-2 gradient path (each in its own trace window)."""
    return {"ddp": train_ddp(steps, batch, seed), "yours": train_zero2(reduce_fn, steps, batch, seed)}
