"""A memory ledger for CPU (and GPU) ranks: the bytes of live tensors, sampled after every operation.

CPU has no ``torch.cuda.max_memory_allocated``. The ledger is a ``TorchDispatchMode``: every tensor an
operation produces is noted by its storage (weakly, so the ledger never keeps memory alive), and after each
operation it sums ``nbytes()`` of the storages still alive. A storage freed with ``resize_(0)`` (how FSDP and
your ZeRO-3 release gathered parameters while keeping the tensor objects) counts 0 from then on. This is the
same idea as torch's ``torch.distributed._tools.mem_tracker.MemTracker``, reduced to one number and a
timeline.

    with lab03.MemoryLedger() as ledger:      # open it BEFORE building the model: it sees what is made inside
        model = lab03.make_model()
        ...
        ledger.mark("after step")
    ledger.peak, ledger.frame()

On a GPU rank the ledger also reports ``torch.cuda.max_memory_allocated`` (the allocator's own number).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pandas as pd
import torch
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes
from torch.utils._pytree import tree_leaves


class MemoryLedger(TorchDispatchMode):
    """Live tensor bytes after every op (``peak``, ``current()``) and at named marks (``frame()``)."""

    def __init__(self) -> None:
        super().__init__()
        self._storages: dict[int, weakref.ref] = {}
        self.peak = 0
        self.peak_at = ""
        self.marks: list[dict[str, Any]] = []
        self._where = "start"

    # -- tracking -------------------------------------------------------------------------------------------
    def track(self, *tensors: Any) -> None:
        """Count tensors made before the ledger was opened (or outside it) from now on."""
        for t in tensors:
            if isinstance(t, torch.Tensor) and not getattr(t, "is_meta", False):
                local = t.to_local() if hasattr(t, "to_local") else t  # a DTensor holds its shard
                st = local.untyped_storage()
                key = id(st)
                if key not in self._storages:
                    # the callback drops the entry when the storage dies (never keep memory alive)
                    self._storages[key] = weakref.ref(st, lambda _r, k=key: self._storages.pop(k, None))

    def current(self) -> int:
        """Bytes of all tracked storages alive now (a freed ``resize_(0)`` storage counts 0)."""
        total = 0
        for ref in list(self._storages.values()):
            st = ref()
            if st is not None:
                total += st.nbytes()
        return total

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        out = func(*args, **(kwargs or {}))
        self.track(*tree_leaves(out))
        now = self.current()
        if now > self.peak:
            self.peak, self.peak_at = now, self._where
        return out

    # -- marks ----------------------------------------------------------------------------------------------
    def mark(self, where: str) -> int:
        """Record the live bytes now under the label ``where`` (later peaks are attributed to it)."""
        now = self.current()
        self._where = where
        if now > self.peak:
            self.peak, self.peak_at = now, where
        self.marks.append({"where": where, "live_bytes": now, "peak_so_far": self.peak})
        return now

    def reset_peak(self) -> None:
        """Start a new peak from the current live bytes (e.g. after building the model)."""
        self.peak = self.current()
        self.peak_at = self._where
        if torch.cuda.is_available():
            torch.cuda.reset_peak_memory_stats()

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.marks, columns=["where", "live_bytes", "peak_so_far"])

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"peak_bytes": int(self.peak), "peak_at": self.peak_at,
                               "live_bytes": int(self.current())}
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            out["cuda_max_allocated"] = int(torch.cuda.max_memory_allocated())
        return out


@contextmanager
def untracked() -> Iterator[None]:
    """Tensors made inside are invisible to the ledger (a test's copies are not the training's memory)."""
    with _disable_current_modes():
        yield


def watch(model: torch.nn.Module, ledger: MemoryLedger) -> list[Any]:
    """Mark the ledger at every module's forward entry/exit (labels like ``fwd> blocks.0``). Returns the
    hook handles."""
    handles = []
    for name, mod in model.named_modules():
        label = name or "root"
        # hooks must return None: a forward pre-hook's return value would replace the module's inputs
        handles.append(mod.register_forward_pre_hook(
            lambda _m, _a, label=label: (ledger.mark(f"fwd> {label}"), None)[1]))
        handles.append(mod.register_forward_hook(
            lambda _m, _a, _o, label=label: (ledger.mark(f"fwd< {label}"), None)[1]))
    return handles


def tensor_bytes(tensors: Any) -> int:
    """Bytes held by ``tensors`` (an iterable, a dict's values, an optimizer's state), each storage once."""
    seen: dict[int, int] = {}
    for t in tree_leaves(tensors):
        if isinstance(t, torch.Tensor):
            local = t.to_local() if hasattr(t, "to_local") else t
            st = local.untyped_storage()
            seen[st.data_ptr() or id(st)] = st.nbytes()
    return sum(seen.values())


def optimizer_state_bytes(optimizer: torch.optim.Optimizer) -> int:
    """Bytes of an optimizer's state tensors (Adam's moments and step counters) on this rank."""
    return tensor_bytes([dict(s) for s in optimizer.state.values()])
