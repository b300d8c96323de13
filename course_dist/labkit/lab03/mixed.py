"""Mixed precision as a measured demonstration (issue 26 item 2; not an exercise of the lab yet): the recipe a
user writes without FSDP2 - bf16 parameters and gradients for compute, fp32 master weights and AdamW moments
(2 + 2 + 4 + 8 bytes per parameter) - against FSDP2's ``MixedPrecisionPolicy`` as the oracle, with the
gradients reduced in fp32 or in bf16. ``bench/bench_lab03.py`` runs it and writes the figures.

    course_dist.launch(lab03.mixed_precision_check, world_size=2, args=("float32",))
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F

from course_dist.labkit.lab03.harness import BATCH, LR, WD
from course_dist.labkit.lab03.ledger import optimizer_state_bytes, tensor_bytes
from course_dist.labkit.lab03.model import local_batch, make_model


class MixedPrecisionAdamW:
    """The recipe issue 26 item 2 asks about, as a user writes it without FSDP2: bf16 parameters and gradients
    for compute (2 + 2 bytes per parameter), fp32 master weights (4) and AdamW moments (8) - 2 + 2 + 12; each
    bf16 gradient cast to ``reduce_dtype``, all-reduced, averaged, and stepped on its fp32 master."""

    def __init__(self, params: Any, lr: float, weight_decay: float, reduce_dtype: Any) -> None:
        self.params, self.reduce_dtype = list(params), reduce_dtype
        self.master = [p.detach().float().clone() for p in self.params]
        for p in self.params:
            p.data = p.data.to(torch.bfloat16)
        self.optimizer = torch.optim.AdamW(self.master, lr=lr, weight_decay=weight_decay)
        self.last_grads: list[Any] = []

    def step(self, keep_grads: bool = False) -> None:
        with torch.no_grad():
            for p, m in zip(self.params, self.master, strict=True):
                g = p.grad.to(self.reduce_dtype)
                dist.all_reduce(g)
                m.grad = g.div_(dist.get_world_size()).float()
                p.grad = None
            if keep_grads:
                self.last_grads = [m.grad.clone() for m in self.master]
            self.optimizer.step()
            for p, m in zip(self.params, self.master, strict=True):
                p.copy_(m)  # cast back to bf16 for the next forward
                m.grad = None


def mixed_precision_check(reduce_dtype_name: str, steps: int = 3) -> dict[str, Any]:
    """Inside a rank: the recipe vs FSDP2 ``MixedPrecisionPolicy(bf16, reduce_dtype)`` per block on the lab
    model, same data: parameter difference after ``steps`` steps, the first averaged gradient, the bytes per
    parameter by category after the second backward, and the median step time of each."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    reduce_dtype = getattr(torch, reduce_dtype_name)
    world, rank = dist.get_world_size(), dist.get_rank()
    model = make_model(0)
    n = sum(p.numel() for p in model.parameters())
    opt = MixedPrecisionAdamW(model.parameters(), LR, WD, reduce_dtype)
    out: dict[str, Any] = {"numel": n}
    times = []
    for step in range(steps):
        x, y = local_batch(step, BATCH, world, rank)
        t0 = time.perf_counter()
        F.cross_entropy(model(x.to(torch.bfloat16)).float(), y).backward()
        if step == 1:
            out["bytes_per_param"] = {
                "bf16 parameters": tensor_bytes(opt.params) / n,
                "bf16 gradients": tensor_bytes([p.grad for p in opt.params]) / n,
                "fp32 master": tensor_bytes(opt.master) / n,
                "AdamW moments": optimizer_state_bytes(opt.optimizer) / n}
        opt.step(keep_grads=step == 0)
        times.append(time.perf_counter() - t0)
        if step == 0:
            grads0 = [g.clone() for g in opt.last_grads]
    mesh = init_device_mesh("cpu", (world,))
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=reduce_dtype)
    ref = make_model(0)
    for block in ref.blocks:
        fully_shard(block, mesh=mesh, mp_policy=policy)
    fully_shard(ref, mesh=mesh, mp_policy=policy)
    ropt = torch.optim.AdamW(ref.parameters(), lr=LR, weight_decay=WD)
    rtimes = []
    for step in range(steps):
        x, y = local_batch(step, BATCH, world, rank)
        t0 = time.perf_counter()
        ropt.zero_grad(set_to_none=True)
        F.cross_entropy(ref(x).float(), y).backward()
        if step == 0:
            rgrads0 = [p.grad.full_tensor().detach().clone() for p in ref.parameters()]
        ropt.step()
        rtimes.append(time.perf_counter() - t0)
    full = [p.full_tensor().detach() for p in ref.parameters()]
    out["param_diff"] = max(float((m - f).abs().max()) for m, f in zip(opt.master, full, strict=True))
    out["grad0_diff"] = max(float((g - r).abs().max()) for g, r in zip(grads0, rgrads0, strict=True))
    out["grads0"] = grads0
    out["step_s"], out["fsdp2_step_s"] = statistics.median(times[1:]), statistics.median(rtimes[1:])
    return out
