"""ZeRO-1 machinery: what makes a sharded optimizer behave like the ``torch.optim`` class it wraps, so that
the exercise is only the sharding step (``shard_range``, a reduce-scatter, the inner step, an all-gather).

- ``FlatBucket``: the parameters of one dtype laid end to end in one padded flat buffer (``full``) that the
  parameters become views of; ``pieces`` are this rank's slices of it, one per parameter it overlaps (the
  inner optimizer steps those, so its state is per parameter piece, exactly as it would be per parameter);
  ``grad_flags`` says which parameters have a gradient on this rank (only this rank: ranks may use different
  parameters), ``set_piece_grads`` takes the flags to step by;
- ``ShardedOptimizerBase``: a ``torch.optim.Optimizer`` (``param_groups``, ``zero_grad``, LR schedulers)
  whose ``state_dict`` is this rank's shard of the wrapped optimizer's state.

Why pieces and not one flat tensor: a parameter without a gradient (frozen, or unused this step) must be
skipped exactly as the wrapped optimizer skips it (no weight decay, no moment decay, no step count); only a
tensor per parameter can be skipped alone. Why one buffer per dtype: a bf16 parameter must keep bf16 (and
its optimizer state bf16, as torch's would be), never be cast silently into an fp32 buffer.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

import torch
from torch import nn

from course_dist.labkit.lab03.model import view_params


class FlatBucket:
    """One dtype's parameters, flat and padded to ``chunk * world``; this rank owns ``[start, end)``."""

    def __init__(self, params: list[nn.Parameter], world: int, rank: int, shard: tuple[int, int]) -> None:
        if not params:
            raise ValueError("a FlatBucket needs at least one parameter, got none")
        dtypes = {p.dtype for p in params}
        if len(dtypes) != 1:
            raise ValueError(f"a FlatBucket holds one dtype, got {sorted(map(str, dtypes))}")
        self.params = list(params)
        self.dtype = params[0].dtype
        self.numel = sum(p.numel() for p in params)
        self.world, self.rank = world, rank
        self.chunk = -(-self.numel // world)
        start, end = shard
        if not 0 <= start <= end <= self.numel or end - start > self.chunk:
            raise ValueError(f"rank {rank}'s shard {shard} does not fit {self.numel} elements in chunks of "
                             f"{self.chunk} over {world} ranks")
        self.start, self.end = start, end
        with torch.no_grad():
            self.full = torch.zeros(self.chunk * world, dtype=self.dtype, device=params[0].device)
            offset = 0
            for p in self.params:
                self.full[offset:offset + p.numel()].copy_(p.detach().reshape(-1))
                offset += p.numel()
        view_params(self.params, self.full)  # the all-gather into `full` updates every parameter
        # my slice of each parameter: (parameter, piece of `full`, where it sits in my chunk)
        self.pieces: list[tuple[nn.Parameter, torch.Tensor, int]] = []
        offset = 0
        for p in self.params:
            lo, hi = max(offset, start), min(offset + p.numel(), end)
            if lo < hi:
                self.pieces.append((p, self.full[lo:hi], lo - start))
            offset += p.numel()

    def my_chunk(self) -> torch.Tensor:
        """My chunk-sized piece of ``full`` (padding included): what I all-gather."""
        return self.full[self.rank * self.chunk:(self.rank + 1) * self.chunk]

    @torch.no_grad()
    def flat_grads(self) -> torch.Tensor:
        """The gradients, flat and padded to ``chunk * world`` (zeros where ``p.grad`` is None). Each
        ``p.grad`` becomes a view of it as it is copied (same values), so the gradients exist once, not
        twice: the copy costs one parameter's bytes at a time, not the model's."""
        flat = torch.zeros(self.chunk * self.world, dtype=self.dtype, device=self.full.device)
        offset = 0
        for p in self.params:
            n = p.numel()
            if p.grad is not None:
                flat[offset:offset + n].copy_(p.grad.reshape(-1))
                p.grad = flat[offset:offset + n].view_as(p)
            offset += n
        return flat

    def grad_flags(self) -> torch.Tensor:
        """One int32 per parameter (bucket order): 1 where THIS rank's ``p.grad`` exists, else 0. Local only:
        another rank may have used a parameter this rank did not."""
        return torch.tensor([p.grad is not None for p in self.params], dtype=torch.int32,
                            device=self.full.device)

    def set_piece_grads(self, grad_shard: torch.Tensor, has_grad: torch.Tensor) -> None:
        """Hand my averaged gradient chunk to my pieces. ``has_grad``: one flag per parameter (bucket order),
        true where the parameter has a gradient; a piece whose flag is false gets ``None`` (the wrapped
        optimizer then skips it, as it would skip the parameter)."""
        if grad_shard.numel() < self.end - self.start or grad_shard.dtype != self.dtype:
            raise ValueError(f"gradient shard of {grad_shard.numel()} {grad_shard.dtype} elements, want at "
                             f"least {self.end - self.start} {self.dtype}")
        flags = torch.as_tensor(has_grad).reshape(-1)
        if flags.numel() != len(self.params):
            raise ValueError(f"has_grad has {flags.numel()} flags, want one per parameter of the bucket "
                             f"({len(self.params)})")
        index = {id(p): i for i, p in enumerate(self.params)}
        for p, piece, at in self.pieces:
            piece.grad = grad_shard[at:at + piece.numel()] if bool(flags[index[id(p)]]) else None

    def clear_piece_grads(self) -> None:
        for _p, piece, _at in self.pieces:
            piece.grad = None


def dtype_groups(params: Iterable[nn.Parameter]) -> list[list[nn.Parameter]]:
    """Parameters split by dtype, first-seen order (one flat buffer each: no silent cast)."""
    out: dict[torch.dtype, list[nn.Parameter]] = {}
    for p in params:
        out.setdefault(p.dtype, []).append(p)
    return list(out.values())


def inner_groups(param_groups: list[dict[str, Any]], buckets: list[FlatBucket]) -> list[dict[str, Any]]:
    """The wrapped optimizer's parameter groups: each outer group's hyperparameters over my pieces of its
    parameters (a group of which I own no piece stays, empty, so group indices match for schedulers)."""
    owner = {id(p): [] for g in param_groups for p in g["params"]}
    for b in buckets:
        for p, piece, _at in b.pieces:
            owner[id(p)].append(piece)
    return [{**{k: v for k, v in g.items() if k != "params"},
             "params": [piece for p in g["params"] for piece in owner[id(p)]]} for g in param_groups]


class ShardedOptimizerBase(torch.optim.Optimizer):
    """A ``torch.optim.Optimizer`` wrapping ``optimizer_cls`` over this rank's shard.

    Subclasses build ``self.buckets`` (``FlatBucket``s) and ``self.optimizer`` (the wrapped optimizer over
    ``inner_groups``) in ``__init__`` and write ``step``; they call ``self.sync_groups()`` before the inner
    step so that an LR scheduler (which edits ``self.param_groups``) reaches the wrapped optimizer."""

    optimizer: torch.optim.Optimizer
    buckets: list[FlatBucket]

    def __init__(self, params: Iterable[Any], optimizer_cls: type[torch.optim.Optimizer],
                 **kwargs: Any) -> None:
        if not (isinstance(optimizer_cls, type) and issubclass(optimizer_cls, torch.optim.Optimizer)):
            raise TypeError(f"optimizer_cls must be a torch.optim.Optimizer class, got {optimizer_cls!r}")
        super().__init__(params, kwargs)
        self.optimizer_cls = optimizer_cls

    def sync_groups(self) -> None:
        """Copy every hyperparameter (lr, weight decay, ...) of my groups to the wrapped optimizer's."""
        for outer, inner in zip(self.param_groups, self.optimizer.param_groups, strict=True):
            inner.update({k: v for k, v in outer.items() if k != "params"})

    def state_dict(self) -> dict[str, Any]:
        """This rank's shard of the wrapped optimizer's state (each rank saves its own, as DCP does)."""
        self.sync_groups()
        return self.optimizer.state_dict()

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state_dict)
        for outer, inner in zip(self.param_groups, self.optimizer.param_groups, strict=True):
            outer.update({k: v for k, v in inner.items() if k != "params"})


# -- the requirements test: a model with every awkward kind of parameter, world 3 --------------------------
class QuirkyModel(nn.Module):
    """Tied (embedding = head), frozen, never-used and every-other-step parameters, one bf16 layer; numels per
    dtype (253 fp32, 35 bf16) not divisible by 3. ``half=False``: the same model all fp32 (the layer gets a
    bias: 295 elements, not divisible by 3), for torch's ZeroRedundancyOptimizer (it refuses mixed dtypes)."""

    def __init__(self, seed: int = 0, half: bool = True) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.dtype = torch.bfloat16 if half else torch.float32
        self.emb = nn.Embedding(11, 7)
        self.frozen = nn.Linear(7, 7).requires_grad_(False)
        self.mid = nn.Linear(7, 5)
        self.halfp = nn.Linear(5, 7, bias=not half).to(self.dtype)
        self.sometimes = nn.Linear(7, 7)  # used on even steps only: its gradient is None on odd ones
        self.unused = nn.Linear(7, 3)  # never used: gradient always None
        self.head = nn.Linear(7, 11, bias=False)
        self.head.weight = self.emb.weight  # tied

    def forward(self, tokens: torch.Tensor, step: int) -> torch.Tensor:
        h = self.frozen(self.emb(tokens).mean(1)).tanh()
        h = self.halfp(self.mid(h).relu().to(self.dtype)).float()
        if step % 2 == 0:
            h = h + self.sometimes(h)
        return self.head(h)


def _groups(model: nn.Module) -> list[dict[str, Any]]:
    """Two groups as a user would write them: matrices with weight decay, biases without."""
    params = list(model.parameters())
    return [{"params": [p for p in params if p.ndim >= 2]},
            {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0}]


def _run(model: nn.Module, opt: torch.optim.Optimizer, steps: range, average: bool, seed: int) -> Any:
    import torch.distributed as dist
    import torch.nn.functional as F

    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    for step in steps:
        opt.zero_grad()
        g = torch.Generator().manual_seed(seed * 1000 + step * 10 + dist.get_rank())
        tokens, target = torch.randint(0, 11, (4, 3), generator=g), torch.randint(0, 11, (4,), generator=g)
        F.cross_entropy(model(tokens, step), target).backward()
        if average:  # the replicated baseline: every existing gradient averaged, None stays None
            for p in model.parameters():
                if p.grad is not None:
                    dist.all_reduce(p.grad)
                    p.grad.div_(dist.get_world_size())
        opt.step()
        sched.step()
    return sched


def _vs_zero_redundancy(opt_cls: type, cls: type, kw: dict[str, Any], steps: int, seed: int) -> float:
    """Max |diff| of the parameters after ``steps`` steps: your wrapper vs torch's ZeroRedundancyOptimizer
    wrapping ``cls``, on the all-fp32 ``QuirkyModel`` (tied, frozen, unused, every-other-step parameters; two
    groups; StepLR), gradients all-reduced for torch's (it reduces none itself)."""
    from course_dist.labkit.lab03.harness import _import_zero_redundancy

    zro, mine = QuirkyModel(seed, half=False), QuirkyModel(seed, half=False)
    _run(zro, _import_zero_redundancy()(_groups(zro), optimizer_class=cls, **kw), range(steps), True, seed)
    _run(mine, opt_cls(_groups(mine), cls, **kw), range(steps), False, seed)
    return max(float((p.detach() - q.detach()).abs().max())
               for p, q in zip(mine.parameters(), zro.parameters(), strict=True))


def zero1_requirements(opt_cls: type, steps: int = 3, seed: int = 0) -> dict[str, Any]:
    """Inside a rank (world 3): your ``opt_cls(params, optimizer_cls, **kwargs)`` against the wrapped torch
    optimizer itself (gradients all-reduced), for AdamW and SGD with momentum, on ``QuirkyModel`` with two
    parameter groups and a StepLR schedule. One entry per requirement."""
    import torch.distributed as dist

    from course_dist.labkit.lab03.rank_use import zero1_rank_use

    out: dict[str, Any] = {}
    rank_use = zero1_rank_use(opt_cls, steps, seed)  # parameters used on some ranks only (issue 33)
    for name, cls, kw in [("AdamW", torch.optim.AdamW, {"lr": 1e-2, "weight_decay": 0.1}),
                          ("SGD", torch.optim.SGD, {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01})]:
        ref = QuirkyModel(seed)
        _run(ref, cls(_groups(ref), **kw), range(steps), True, seed)
        mine = QuirkyModel(seed)
        init = {n: p.detach().clone() for n, p in mine.named_parameters()}
        opt = opt_cls(_groups(mine), cls, **kw)
        r: dict[str, Any] = {"is_optimizer": isinstance(opt, torch.optim.Optimizer),
                             "groups": len(opt.param_groups)}
        _run(mine, opt, range(steps - 1), False, seed)
        saved = copy.deepcopy(opt.state_dict())  # as written to disk now (state_dict holds live tensors)
        sched = _run(mine, opt, range(steps - 1, steps), False, seed)
        r["lr_after"] = [g["lr"] for g in opt.param_groups]
        r["lr_want"] = [kw["lr"] * 0.5 ** steps] * 2
        # the learning rate the wrapped optimizer last stepped with (StepLR halves it after each step): the
        # scheduler edits the outer param_groups; only sync_groups carries it inside
        inner_opt = getattr(opt, "optimizer", None)
        r["inner_lr"] = [g["lr"] for g in inner_opt.param_groups] if inner_opt is not None else []
        r["inner_lr_want"] = [kw["lr"] * 0.5 ** (steps - 1)] * 2
        del sched
        rp, mp = dict(ref.named_parameters()), dict(mine.named_parameters())
        r["zro_max_diff"] = _vs_zero_redundancy(opt_cls, cls, kw, steps, seed)
        r["dtypes"] = {n: str(p.dtype) for n, p in mp.items()}
        r["max_diff"] = {str(dt): max(float((mp[n].detach().float() - rp[n].detach().float()).abs().max())
                                      for n in mp if mp[n].dtype == dt)
                         for dt in (torch.float32, torch.bfloat16)}
        r["frozen_unchanged"] = all(torch.equal(mp[n], init[n]) for n in ("frozen.weight", "frozen.bias"))
        r["unused_unchanged"] = all(torch.equal(mp[n], init[n]) for n in ("unused.weight", "unused.bias"))
        # the bf16 layer's optimizer state, bf16 as torch's would be (SGD's momentum, Adam's moments)
        half_ids = {id(piece) for b in getattr(opt, "buckets", []) for p, piece, _ in b.pieces
                    if p is mine.halfp.weight}
        inner = getattr(opt, "optimizer", None)
        r["bf16_state"] = sorted({str(t.dtype) for piece, s in (inner.state.items() if inner else [])
                                  if id(piece) in half_ids for k, t in s.items()
                                  if isinstance(t, torch.Tensor) and k != "step"})
        opt.zero_grad()
        r["zero_grad_clears"] = all(p.grad is None for p in mine.parameters())
        # resume: a fresh optimizer on a copy of the model after step 2 loads the state dict, takes step 3
        again = QuirkyModel(seed)
        opt2 = opt_cls(_groups(again), cls, **kw)
        _run(again, opt2, range(steps - 1), False, seed)
        opt3 = opt_cls(_groups(again), cls, **kw)  # fresh state: only the state dict can make it right
        opt3.load_state_dict(saved)
        _run(again, opt3, range(steps - 1, steps), False, seed)
        r["resume_diff"] = max(float((p.detach().float() - q.detach().float()).abs().max())
                               for p, q in zip(again.parameters(), mine.parameters(), strict=True))  # noqa: E501
        r["world"] = dist.get_world_size()
        r["rank_use"] = rank_use[name]
        out[name] = r
    return out
