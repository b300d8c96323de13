"""Guards that turn a plausible ZeRO-3 mistake into a message naming it, instead of torch's internals.

A unit whose parameters are freed after forward and never gathered again before backward makes autograd
read a view of a 0-byte storage: torch raises ``setStorage: sizes [...] ... out of bounds for storage of size
0``, which names neither the unit nor the missing hook.

A shard kept as a *view* of the gathered flat buffer (``full.chunk(world)[rank]``, a slice without
``.clone()``) shares that buffer's storage: freeing the buffer frees the shard, and the optimizer then
steps freed memory (a SIGSEGV, or garbage). ``check_shard`` names that at construction instead.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


def _label(name: str) -> str:
    return f"unit '{name}'" if name else "the root unit (the parameters no other unit claimed)"


def _storage_id(t: torch.Tensor) -> int:
    return t.untyped_storage()._cdata


def check_shard(unit: Any, name: str) -> None:
    """After ``unit_cls(params)``: ValueError when this rank's ``unit.shard`` shares storage with the unit's
    gathered buffer (``unit.full``) or its parameters (views of that buffer), or has lost its memory."""
    shard = getattr(unit, "shard", None)
    if not isinstance(shard, torch.Tensor):
        return
    full = getattr(unit, "full", None)
    others = ([full] if isinstance(full, torch.Tensor) else []) + list(getattr(unit, "params", []))
    shared = any(_storage_id(shard) == _storage_id(t) for t in others)
    need = (shard.storage_offset() + shard.numel()) * shard.element_size()
    freed = shard.numel() > 0 and shard.untyped_storage().nbytes() < need
    if shared or freed:
        state = {(True, True): "it shares that buffer's memory, already freed",
                 (True, False): "it shares that buffer's memory"}.get((shared, freed), "its memory is freed")
        raise ValueError(f"{_label(name)}: this rank's shard (self.shard) is a view of the gathered buffer "
                         f"(self.full), {state}: freeing the buffer frees the shard, and the optimizer would "
                         "step freed memory (a crash or garbage). Keep a copy: "
                         "self.full[start:end].clone()")


def backward_or_explain(loss: torch.Tensor, model: nn.Module, units: list[Any], names: list[str]) -> None:
    """``loss.backward()``; when it fails on a freed storage, raise a RuntimeError naming the unit that was
    still sharded (the one of the last module in forward order: backward meets it first) and the hook that
    must gather it. ``names``: each unit's module name (``""`` for the root), as ``shard_model`` returns."""
    try:
        loss.backward()
    except RuntimeError as exc:
        if "storage of size 0" not in str(exc):
            raise
        order = [n for n, _m in model.named_modules()]
        freed = [n for u, n in zip(units, names, strict=True)
                 if any(p.untyped_storage().nbytes() == 0 for p in getattr(u, "params", []))]
        freed.sort(key=lambda n: -order.index(n) if n else -len(order))  # the root's head runs last
        unit = _label(freed[0]) if freed else "a unit"
        raise RuntimeError(f"{unit}: its parameters are still sharded at backward: gather them in the "
                           "pre-backward hook (attach_zero3: a hook on the module's output tensor runs just "
                           f"before the module's backward). torch said: {exc}") from None
