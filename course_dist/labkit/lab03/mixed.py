"""Mixed precision (issue 26 item 2; lab 03's stretch B): the recipe a user writes without FSDP2 - bf16
parameters and gradients for compute, fp32 master weights and AdamW moments (2 + 2 + 4 + 8 bytes per
parameter) - against FSDP2's ``MixedPrecisionPolicy`` as the oracle, with the gradients reduced in fp32 or in
bf16. The step that matters (reduce the bf16 gradients in the reduce dtype, average, step the fp32 masters,
cast back) is the student's ``master_step``; this module holds everything around it. Never a solution.

    course_dist.launch(lab03.mixed_precision_check, world_size=2, args=("float32", master_step))
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F

from course_dist.labkit.lab03.harness import BATCH, LR, WD
from course_dist.labkit.lab03.ledger import optimizer_state_bytes, tensor_bytes
from course_dist.labkit.lab03.model import local_batch, make_model


class MixedPrecisionAdamW:
    """The recipe as a user writes it without FSDP2: bf16 parameters and gradients for compute (2 + 2 bytes
    per parameter), fp32 master weights (4) and AdamW moments over the masters (8) - 2 + 2 + 12.
    ``step()`` calls ``step_fn(params, master, optimizer, reduce_dtype)`` (the student's ``master_step``)."""

    def __init__(self, params: Any, lr: float, weight_decay: float, reduce_dtype: Any,
                 step_fn: Callable) -> None:
        self.params, self.reduce_dtype, self.step_fn = list(params), reduce_dtype, step_fn
        self.master = [p.detach().float().clone() for p in self.params]
        for p in self.params:
            p.data = p.data.to(torch.bfloat16)
        self.optimizer = torch.optim.AdamW(self.master, lr=lr, weight_decay=weight_decay)
        self.stepped_grads: list[list[torch.Tensor]] = []  # the master gradients each optimizer step saw
        self.optimizer.register_step_pre_hook(
            lambda *_: self.stepped_grads.append(
                [torch.zeros_like(m) if m.grad is None else m.grad.clone() for m in self.master]))

    def step(self) -> None:
        self.step_fn(self.params, self.master, self.optimizer, self.reduce_dtype)


def mixed_precision_check(reduce_dtype_name: str, step_fn: Callable, steps: int = 3,
                          seed: int = 0) -> dict[str, Any]:
    """Inside a rank: the recipe with ``step_fn`` vs FSDP2 ``MixedPrecisionPolicy(bf16, reduce_dtype)`` per
    block on the lab model, same data: the fp32 masters against FSDP2's fp32 parameters after ``steps``
    steps, the first averaged gradient of each, the bytes per parameter by category after the second
    backward, the parameters' dtypes, and the median step time of each."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    reduce_dtype = getattr(torch, reduce_dtype_name)
    world, rank = dist.get_world_size(), dist.get_rank()
    model = make_model(seed)
    n = sum(p.numel() for p in model.parameters())
    opt = MixedPrecisionAdamW(model.parameters(), LR, WD, reduce_dtype, step_fn)
    out: dict[str, Any] = {"numel": n, "reduce_dtype": reduce_dtype_name}
    times = []
    for step in range(steps):
        x, y = local_batch(step, BATCH, world, rank, seed)
        t0 = time.perf_counter()
        F.cross_entropy(model(x.to(torch.bfloat16)).float(), y).backward()
        if step == 1:  # after the second backward: what lives between the backward and the step
            out["bytes_per_param"] = {
                "bf16 parameters": tensor_bytes(opt.params) / n,
                "bf16 gradients": tensor_bytes([p.grad for p in opt.params]) / n,
                "fp32 master": tensor_bytes(opt.master) / n,
                "fp32 master gradients": tensor_bytes([m.grad for m in opt.master if m.grad is not None]) / n,
                "AdamW moments": optimizer_state_bytes(opt.optimizer) / n}
        opt.step()
        times.append(time.perf_counter() - t0)
    out["dtypes"] = sorted({str(p.dtype) for p in opt.params})
    mesh = init_device_mesh("cpu", (world,))
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=reduce_dtype)
    ref = make_model(seed)
    for block in ref.blocks:
        fully_shard(block, mesh=mesh, mp_policy=policy)
    fully_shard(ref, mesh=mesh, mp_policy=policy)
    ropt = torch.optim.AdamW(ref.parameters(), lr=LR, weight_decay=WD)
    rtimes = []
    for step in range(steps):
        x, y = local_batch(step, BATCH, world, rank, seed)
        t0 = time.perf_counter()
        ropt.zero_grad(set_to_none=True)
        F.cross_entropy(ref(x).float(), y).backward()
        if step == 0:
            rgrads0 = [p.grad.full_tensor().detach().clone() for p in ref.parameters()]
        ropt.step()
        rtimes.append(time.perf_counter() - t0)
    full = [p.full_tensor().detach() for p in ref.parameters()]
    nan = [torch.full_like(m, float("nan")) for m in opt.master]  # never stepped: nothing matches
    grads0 = opt.stepped_grads[0] if opt.stepped_grads else nan
    out["param_diff"] = max(float((m - f).abs().max()) for m, f in zip(opt.master, full, strict=True))
    out["grad0_diff"] = max(float((g - r).abs().max()) for g, r in zip(grads0, rgrads0, strict=True))
    out["grads0"], out["steps_taken"] = grads0, len(opt.stepped_grads)
    out["step_s"], out["fsdp2_step_s"] = statistics.median(times[1:]), statistics.median(rtimes[1:])
    return out


def mixed_check(step_fn: Callable, dtypes: tuple[str, ...] = ("float32", "bfloat16"), steps: int = 3,
                seed: int = 0) -> dict[str, Any]:
    """One launch: ``mixed_precision_check`` for each reduce dtype, and the reduce dtype's effect on the
    first averaged gradient (max abs and max relative difference, bitwise equal or not)."""
    runs = {d: mixed_precision_check(d, step_fn, steps, seed) for d in dtypes}
    effect = None
    if "float32" in runs and "bfloat16" in runs:
        g32, g16 = runs["float32"]["grads0"], runs["bfloat16"]["grads0"]
        effect = {"bitwise": all(torch.equal(a, b) for a, b in zip(g16, g32, strict=True)),
                  "max_abs": max(float((a - b).abs().max()) for a, b in zip(g16, g32, strict=True)),
                  "max_rel": max(float(((a - b).abs() / b.abs().clamp_min(1e-12)).max())
                                 for a, b in zip(g16, g32, strict=True))}
    return {"runs": runs, "reduce_effect": effect}
