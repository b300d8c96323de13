"""A memory ledger for CPU (and GPU) ranks: the bytes of live tensors, sampled after every operation.

CPU has no ``torch.cuda.max_memory_allocated``. The ledger is a ``TorchDispatchMode``: every tensor an
operation produces is noted by its storage (weakly, so the ledger never keeps memory alive), and after each
operation it sums ``nbytes()`` of the storages still alive once garbage cycles are collected. A storage
freed with ``resize_(0)`` (how FSDP and your ZeRO-3 release gathered parameters while keeping the tensor
objects) counts 0 from then on. This is the
same idea as torch's ``torch.distributed._tools.mem_tracker.MemTracker``, reduced to one number and a
timeline.

    with lab03.MemoryLedger() as ledger:      # open it BEFORE building the model: it sees what is made inside
        model = lab03.make_model()
        ...
        ledger.mark("after step")
    ledger.peak, ledger.frame()

On a GPU rank the ledger also reports ``torch.cuda.max_memory_allocated`` (the allocator's own number).

Collectives (``c10d`` operations) run on private copies of their tensors, completed before the ledger
samples again. Why: gloo's worker thread drops its reference to a finished collective's tensors a moment
*after* ``wait()`` returns, so a temporary input (a flattened gradient you reduce-scatter, then drop) would
stay alive for a random few ops and the ledger's peak would depend on thread scheduling. With the copies, what
the ledger sees alive is exactly what your Python code holds: the same number on every run.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pandas as pd
import torch
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes


class MemoryLedger(TorchDispatchMode):
    """Live tensor bytes after every op (``peak``, ``current()``) and at named marks (``frame()``)."""

    def __init__(self) -> None:
        super().__init__()
        self._storages: dict[int, weakref.ref] = {}
        self.peak = 0
        self.peak_at = ""
        self.marks: list[dict[str, Any]] = []
        self._where = "start"

    def __enter__(self) -> MemoryLedger:
        # Freeze what exists already: the per-op collection below then only scans objects made inside the
        # ledger (thousands, not the interpreter's ~300k). No collection first: garbage older than the ledger
        # holds no storage it counts (it counts what the ops inside it make and what track() is handed, which
        # the caller holds), so one would change no number, and over ~300k objects it cost 110-150 ms per
        # ledger, most of a ledgered check's CPU.
        self._frozen_before = gc.get_freeze_count()
        gc.freeze()
        return super().__enter__()

    def __exit__(self, *exc: Any) -> Any:
        try:
            return super().__exit__(*exc)
        finally:
            # unfreeze is all or nothing: an enclosing ledger (which froze first) unfreezes at its own exit
            if not self._frozen_before:
                gc.unfreeze()

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

    def live(self) -> int:
        """:meth:`current` after a garbage collection: cycles (torch's pytree helpers, hooks) count as dead
        now, not at a run-dependent moment (cheap: everything older than the ledger is frozen, see
        ``__enter__``). What every mark and the peak are made of."""
        gc.collect()
        return self.current()

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        if func.namespace == "c10d":
            out = _isolated_collective(func, args, kwargs or {})
        else:
            out = func(*args, **(kwargs or {}))
        self.track(*_leaves(out))
        # The peak is the largest live() after any op. A collection only lowers the sum, so it is needed only
        # where the sum without one would be a new peak: the same peak as collecting after every op (which
        # cost most of a ledgered run's CPU: 0.74 of 1.01 s profiled for a 3-step DDP run), collected rarely.
        if self.current() > self.peak:
            now = self.live()
            if now > self.peak:
                self.peak, self.peak_at = now, self._where
        return out

    # -- marks ----------------------------------------------------------------------------------------------
    def mark(self, where: str, collect: bool = False) -> int:
        """Record the live bytes now under the label ``where`` (later peaks are attributed to it).

        Every mark is a :meth:`live` reading (a garbage collection first, so that it is the same on every
        run); ``collect`` is kept for the callers that ask for it at the marks the tests compare."""
        now = self.live()
        self._where = where
        if now > self.peak:
            self.peak, self.peak_at = now, where
        self.marks.append({"where": where, "live_bytes": now, "peak_so_far": self.peak})
        return now

    def reset_peak(self) -> None:
        """Start a new peak from the current live bytes (e.g. after building the model)."""
        self.peak = self.live()
        self.peak_at = self._where
        if torch.cuda.is_available():
            torch.cuda.reset_peak_memory_stats()

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.marks, columns=["where", "live_bytes", "peak_so_far"])

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"peak_bytes": int(self.peak), "peak_at": self.peak_at,
                               "live_bytes": int(self.live())}
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            out["cuda_max_allocated"] = int(torch.cuda.max_memory_allocated())
        return out


def _leaves(x: Any) -> Iterator[Any]:
    """The leaves of nested tuples/lists/dicts. Not ``torch.utils._pytree.tree_leaves``: its recursive
    helper closure is a reference cycle holding the leaves list, so every op's outputs would stay alive until
    the next garbage collection, a moment that differs from run to run (the peak with it)."""
    if isinstance(x, (tuple, list)):
        for v in x:
            yield from _leaves(v)
    elif isinstance(x, dict):
        for v in x.values():
            yield from _leaves(v)
    else:
        yield x


def _map(fn: Callable[[Any], Any], x: Any) -> Any:
    """``fn`` applied to every leaf of nested tuples/lists (same structure; no cycles, see ``_leaves``)."""
    if isinstance(x, (tuple, list)):
        return type(x)(_map(fn, v) for v in x)
    return fn(x)


def _isolated_collective(func: Any, args: tuple, kwargs: dict) -> Any:
    """Run a c10d op on clones of its tensors, wait for it, copy the written ones back; return its result
    with the caller's tensors in place of the clones (its Work is already complete: a later ``wait()`` is a
    no-op). The process group's threads then only ever hold the clones, which the ledger never tracked."""
    names = [a.name for a in func._schema.arguments]
    pairs: list[tuple[torch.Tensor, torch.Tensor, bool]] = []  # (caller's, clone, written by the op)
    clone_of: dict[int, torch.Tensor] = {}

    def swap(t: Any, written: bool) -> Any:
        if not isinstance(t, torch.Tensor):
            return t
        c = t.clone()
        pairs.append((t, c, written))
        clone_of[c.untyped_storage().data_ptr()] = t
        return c

    def swapper(name: str) -> Callable[[Any], Any]:
        written = not name.startswith("input")  # c10d schemas name what an op only reads input*
        return lambda t: swap(t, written)

    # the clones and the backend's own work on them are not the caller's memory: gloo's reduce-scatter
    # splits and copies its input with aten ops on this thread, which were tracked (+1.5x the input,
    # measured: 12.7 MB on an 8.5 MB reduce-scatter) and billed a backend detail to the caller's code
    with _disable_current_modes():
        new_args = tuple(_map(swapper(n), a) for n, a in zip(names, args, strict=False))
        new_kwargs = {k: _map(swapper(k), v) for k, v in kwargs.items()}
        out = func(*new_args, **new_kwargs)
        for leaf in _leaves(out):
            if hasattr(leaf, "wait") and not isinstance(leaf, torch.Tensor):
                leaf.wait()
    for orig, c, written in pairs:  # outputs last: an input may be a view into an output (FSDP2's all-gather)
        if written:
            orig.copy_(c)
    # the op hands back new tensor objects over the clones' storages: give the caller its own tensors instead
    # (a clone's alias must not reach the ledger, or gloo's late release would make it count again)
    # ... and a finished Work in place of the backend's: gloo's Work copies its result again on the caller's
    # wait() (a split and a copy of the clones, which the ledger would count as the caller's)
    return _map(lambda x: clone_of.get(x.untyped_storage().data_ptr(), x) if isinstance(x, torch.Tensor)
                    else _done_work() if _is_work(x) else x, out)


def _is_work(x: Any) -> bool:
    return isinstance(x, torch.ScriptObject)  # the only non-tensor a c10d op returns: its Work


def _done_work() -> Any:
    from torch._C._distributed_c10d import _create_work_from_future

    fut: torch.futures.Future = torch.futures.Future()
    fut.set_result(None)
    return _create_work_from_future(fut).boxed()  # the ScriptObject form the dispatcher returns


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
    for t in _leaves(tensors):
        if isinstance(t, torch.Tensor):
            local = t.to_local() if hasattr(t, "to_local") else t
            st = local.untyped_storage()
            seen[st.data_ptr() or id(st)] = st.nbytes()
    return sum(seen.values())


def optimizer_state_bytes(optimizer: torch.optim.Optimizer) -> int:
    """Bytes of an optimizer's state tensors (Adam's moments and step counters) on this rank."""
    return tensor_bytes([dict(s) for s in optimizer.state.values()])
