"""ZeRO-1 when ranks use different parameters (issue 33): a parameter used on some ranks only (an MoE expert,
a per-modality branch, a data-dependent skip) has a gradient on those ranks and ``None`` on the others. DDP
(``find_unused_parameters=True``) agrees across ranks which parameters have a gradient: a parameter used on
any rank gets the average over all ranks (the others contribute zeros) and every rank steps it; one used on
no rank keeps ``grad = None`` and is skipped. ``torch``'s ``ZeroRedundancyOptimizer`` over DDP steps the same.

``RankUseModel`` lays its parameters out so that each rank-dependent one is **owned** (in the flat ZeRO-1
shard) by a rank that does **not** use it, at world 2 and at world 3:

- ``last_only`` (first in the flat vector, owned by rank 0): used on the last rank only;
- ``shared``: used on every rank;
- ``zeroed``: used on every rank with a gradient that is exactly zero (a gradient, not ``None``: AdamW's
  weight decay still moves it);
- ``first_only`` (last in the flat vector, owned by the last rank): used on rank 0 only.

No solution here: ``zero1_rank_use`` only runs the student's optimizer class and torch's two references.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist
from torch import nn

# the optimizers of the check: AdamW (weight decay moves a parameter with a zero gradient) and SGD with
# momentum (its step scales with the gradient: dividing by the ranks that used a parameter shows)
RANK_USE_OPTIMIZERS = (("AdamW", torch.optim.AdamW, {"lr": 1e-2, "weight_decay": 0.1}),
                       ("SGD", torch.optim.SGD, {"lr": 0.1, "momentum": 0.9}))


class RankUseModel(nn.Module):
    """Four 4x4 linears (80 fp32 elements: chunks 40 at world 2, 27 at world 3), used by rank."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.last_only = nn.Linear(4, 4)
        self.shared = nn.Linear(4, 4)
        self.zeroed = nn.Linear(4, 4)
        self.first_only = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rank, world = dist.get_rank(), dist.get_world_size()
        h = self.shared(x).tanh()
        if rank == 0:
            h = h + self.first_only(h)
        if rank == world - 1:
            h = h + self.last_only(h)
        return h + 0.0 * self.zeroed(h)  # a gradient everywhere, exactly zero


def _train(model: nn.Module, opt: Any, steps: int, seed: int, forward: nn.Module | None = None) -> None:
    forward = forward or model
    for step in range(steps):
        opt.zero_grad()
        g = torch.Generator().manual_seed(seed * 1000 + step * 10 + dist.get_rank())
        x, y = torch.randn(6, 4, generator=g), torch.randn(6, 4, generator=g)
        ((forward(x) - y) ** 2).mean().backward()
        opt.step()


def zero1_rank_use(opt_cls: type, steps: int = 3, seed: int = 0) -> dict[str, Any]:
    """Inside a rank: ``steps`` steps of ``RankUseModel`` with your ``opt_cls(params, cls, **kw)`` on local
    gradients, against DDP(find_unused_parameters=True) + ``cls`` and against ZeroRedundancyOptimizer(cls)
    over that DDP. Per optimizer: max |diff| to each, and each parameter's change (yours, DDP's)."""
    from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: N817

    from course_dist.labkit.lab03.harness import _import_zero_redundancy

    zro_cls = _import_zero_redundancy()
    out: dict[str, Any] = {}
    for name, cls, kw in RANK_USE_OPTIMIZERS:
        init = {n: p.detach().clone() for n, p in RankUseModel(seed).named_parameters()}
        ddp_model = RankUseModel(seed)
        ddp = DDP(ddp_model, find_unused_parameters=True)
        _train(ddp_model, cls(ddp_model.parameters(), **kw), steps, seed, ddp)
        zro_model = RankUseModel(seed)
        zro = DDP(zro_model, find_unused_parameters=True)
        _train(zro_model, zro_cls(zro_model.parameters(), optimizer_class=cls, **kw), steps, seed, zro)
        mine = RankUseModel(seed)
        _train(mine, opt_cls(mine.parameters(), cls, **kw), steps, seed)
        want, got, torch_zro = (dict(m.named_parameters()) for m in (ddp_model, mine, zro_model))

        def diff(a: dict[str, Any], b: dict[str, Any]) -> float:
            return max(float((a[n].detach() - b[n].detach()).abs().max()) for n in a)

        out[name] = {"vs_ddp": diff(got, want), "vs_zro": diff(got, torch_zro),
                     "ddp_vs_zro": diff(want, torch_zro),
                     "change": {n: [float((got[n].detach() - init[n]).abs().max()),
                                    float((want[n].detach() - init[n]).abs().max())]
                                for n in ("first_only.weight", "last_only.weight", "zeroed.weight")},
                     "world": dist.get_world_size()}
    return out
