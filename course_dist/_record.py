"""Inside a rank: wrap ``torch.distributed`` collectives to record what each rank called (naive but cheap).

Two records, both written with raw ``os`` calls so they survive a SIGKILL and need no Python handler to run
while a rank is blocked inside C++ (where signal handlers cannot run):
- ``last.<rank>``: the last collective entered, overwritten in place with ``os.pwrite`` (always on; this is
  what ``LaunchTimeout.last_collective`` reports);
- ``trace.<rank>.jsonl``: one JSON line when a collective is issued and one when it ends (``trace=True``
  only).

Only attribute lookups through the ``torch.distributed`` namespace are wrapped (``dist.all_reduce(...)``),
which is how user code and most of torch call them; torch's internal calls between c10d functions are not
recorded, so an ``all_gather_object`` counts once, not as the all_gathers it is made of.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import threading
import time
from typing import Any

# op name -> parameter whose shape/dtype every rank must agree on (None: no tensor)
OPS: dict[str, str | None] = {
    "all_reduce": "tensor",
    "broadcast": "tensor",
    "reduce": "tensor",
    "all_gather": "tensor",
    "all_gather_into_tensor": "input_tensor",
    "reduce_scatter": "output",
    "reduce_scatter_tensor": "input",
    "_all_gather_base": "input_tensor",
    "_reduce_scatter_base": "input",
    # torch 2.13's names (FSDP2 calls these; the *_into_tensor / *_tensor / *_base ones are aliases)
    "all_gather_single": "input_tensor",
    "reduce_scatter_single": "input",
    "gather": "tensor",
    "scatter": "tensor",
    "barrier": None,
    "all_to_all": "input_tensor_list",
    "all_to_all_single": "input",
    "all_gather_object": None,
    "broadcast_object_list": "object_list",
    "gather_object": None,
    "scatter_object_list": None,
    "monitored_barrier": None,
    "send": "tensor",
    "recv": "tensor",
    "isend": "tensor",
    "irecv": "tensor",
    "batch_isend_irecv": "p2p_op_list",
}
P2P = {"send", "recv", "isend", "irecv", "batch_isend_irecv"}
# Other names of one collective -> the name recorded for it. In torch 2.13 each alias only forwards to its
# target with the same arguments (distributed_c10d), so it moves the same bytes; recording the target's name
# keeps counts, byte totals and cross-rank comparisons independent of the spelling a student picked. The
# name actually called stays in the record as ``called``. Applied only where the target exists (install).
ALIASES: dict[str, str] = {
    "all_gather_into_tensor": "all_gather_single",
    "_all_gather_base": "all_gather_single",
    "reduce_scatter_tensor": "reduce_scatter_single",
    "_reduce_scatter_base": "reduce_scatter_single",
}
LAST_SIZE = 1024

_last_fd: int | None = None
_trace_fd: int | None = None
_rank = 0
_seq: dict[str, int] = {}
_group_names: dict[int, tuple[str, list[int] | None]] = {}
_installed = False
_skip_prefixes: tuple[str, ...] = ()
_recorded_as: dict[str, str] = {}  # ALIASES whose target this torch has (filled by install)


def _describe(value: Any) -> tuple[Any, str | None]:
    """(shape, dtype) of a tensor, or of a list of tensors as a list of shapes."""
    if value is None:
        return None, None
    shape = getattr(value, "shape", None)
    if shape is not None:
        return list(shape), str(getattr(value, "dtype", "")).replace("torch.", "")
    if isinstance(value, (list, tuple)):
        if value and all(hasattr(v, "shape") for v in value):
            return [list(v.shape) for v in value], str(value[0].dtype).replace("torch.", "")
        return [len(value)], None
    return None, None


def _group(dist: Any, group: Any) -> tuple[str, list[int] | None]:
    if group is None or group is dist.group.WORLD:
        return "WORLD", None
    hit = _group_names.get(id(group))
    if hit is None:
        try:
            ranks = list(dist.get_process_group_ranks(group))
        except Exception:  # not a member, or an exotic group object
            ranks = None
        hit = (f"ranks{tuple(ranks)}" if ranks is not None else f"group@{id(group):x}", ranks)
        _group_names[id(group)] = hit
    return hit


def _site() -> str:
    """file:line of the first caller outside torch (a notebook cell, a lab module), not FSDP's internals."""
    frame = sys._getframe(2)
    first = frame
    for _ in range(40):
        if frame is None:
            break
        if not frame.f_code.co_filename.startswith(_skip_prefixes):
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return f"{first.f_code.co_filename}:{first.f_lineno}"


def _write_last(rec: dict) -> None:
    if _last_fd is not None:
        data = json.dumps(rec).encode()[: LAST_SIZE - 1]
        if hasattr(os, "pwrite"):
            os.pwrite(_last_fd, data.ljust(LAST_SIZE), 0)  # one syscall, no seek state, safe from any thread
        else:  # Windows
            os.lseek(_last_fd, 0, os.SEEK_SET)
            os.write(_last_fd, data.ljust(LAST_SIZE))


def _write_trace(rec: dict) -> None:
    if _trace_fd is not None:
        os.write(_trace_fd, (json.dumps(rec) + "\n").encode())


class _TracedWork:
    """Proxy for an async ``Work``: records when the collective is waited on, delegates everything else."""

    def __init__(self, work: Any, rec: dict) -> None:
        self._work, self._rec = work, rec

    def wait(self, *args: Any, **kwargs: Any) -> Any:
        out = self._work.wait(*args, **kwargs)
        _end(self._rec)
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._work, name)


_inside = threading.local()  # the traced op this thread is executing, so nested calls are not traced twice


def _end_on_completion(work: Any, rec: dict) -> Any:
    try:
        work.get_future().add_done_callback(lambda _fut: _end(rec))
    except (RuntimeError, AttributeError):  # a backend/work type without futures: only the start is traced
        pass
    return work


def _end(rec: dict) -> None:
    if rec.get("done"):
        return
    rec["done"] = True
    now = time.time()
    _write_last({**rec, "t_end": now})
    _write_trace({"end": True, "group": rec["group"], "seq": rec["seq"], "t_end": now})


def _wrap(dist: Any, name: str, fn: Any, tensor_param: str | None) -> Any:
    params = list(inspect.signature(fn).parameters)
    t_idx = params.index(tensor_param) if tensor_param in params else None
    g_idx = params.index("group") if "group" in params else None
    is_p2p = name in P2P
    op = _recorded_as.get(name, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if getattr(_inside, "op", None):  # torch implementing one traced op with another (send -> isend)
            return fn(*args, **kwargs)
        tensor = kwargs.get(tensor_param) if tensor_param else None
        if tensor is None and t_idx is not None and len(args) > t_idx:
            tensor = args[t_idx]
        group = kwargs.get("group")
        if group is None and g_idx is not None and len(args) > g_idx:
            group = args[g_idx]
        gname, granks = ("p2p", None) if is_p2p else _group(dist, group)
        seq = _seq.get(gname, 0)
        _seq[gname] = seq + 1
        shape, dtype = _describe(tensor)
        rec = {
            "rank": _rank,
            "seq": seq,
            "op": op,
            "called": name,
            "shape": shape,
            "dtype": dtype,
            "group": gname,
            "group_ranks": granks,
            "site": _site(),
            "t_start": time.time(),
            "done": False,
        }
        _write_last(rec)
        _write_trace(rec)
        _inside.op = name
        try:
            out = fn(*args, **kwargs)
        finally:
            _inside.op = None
        if out is not None and hasattr(out, "wait"):  # async_op=True, isend, irecv: ends when waited on
            if sys._getframe(1).f_code.co_filename.startswith(_skip_prefixes):
                # Called from torch itself (Join, DDP, FSDP): its C++ side needs the real Work object, so no
                # proxy; the end is recorded when the collective completes instead of when it is waited on.
                return _end_on_completion(out, rec)
            return _TracedWork(out, rec)
        if name == "batch_isend_irecv" and isinstance(out, list):
            return [_TracedWork(w, rec) for w in out]
        _end(rec)
        return out

    wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
    wrapper.__name__ = name
    wrapper.__doc__ = fn.__doc__
    return wrapper


def install(run_dir: str, rank: int, trace: bool) -> None:
    """Wrap the collectives of ``torch.distributed`` in this process (idempotent)."""
    global _last_fd, _trace_fd, _rank, _installed, _skip_prefixes
    import torch
    import torch.distributed as dist

    _rank = rank
    _seq.clear()
    _group_names.clear()
    _last_fd = os.open(os.path.join(run_dir, f"last.{rank}"), os.O_RDWR | os.O_CREAT, 0o600)
    if trace:
        path = os.path.join(run_dir, f"trace.{rank}.jsonl")
        _trace_fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    _skip_prefixes = (os.path.dirname(torch.__file__),)
    if _installed:
        return
    from torch.distributed import distributed_c10d as c10d

    _recorded_as.clear()
    _recorded_as.update({a: t for a, t in ALIASES.items() if hasattr(dist, t)})

    for name, tensor_param in OPS.items():
        fn = getattr(dist, name, None)
        if fn is not None:
            setattr(dist, name, _wrap(dist, name, fn, tensor_param))
    # P2POp (batch_isend_irecv, torch.distributed.pipelining) accepts only ops that ARE c10d's isend/irecv:
    # point those module globals at the same wrappers so torch's own identity check still holds.
    for name in ("isend", "irecv"):
        if hasattr(c10d, name) and hasattr(dist, name):
            setattr(c10d, name, getattr(dist, name))
    _installed = True


def read_last(run_dir: str, rank: int) -> dict | None:
    """Parent side: the last collective ``rank`` entered, or None if it never entered one."""
    try:
        with open(os.path.join(run_dir, f"last.{rank}"), "rb") as f:
            raw = f.read().strip()
        return json.loads(raw) if raw else None
    except (OSError, ValueError):
        return None


def read_trace(run_dir: str, world_size: int) -> list[dict]:
    """Parent side: merge every rank's JSONL (issue lines + end lines) into one record per collective call."""
    rows: list[dict] = []
    for r in range(world_size):
        by_key: dict[tuple, dict] = {}
        try:
            with open(os.path.join(run_dir, f"trace.{r}.jsonl")) as f:
                lines = f.read().splitlines()
        except OSError:
            continue
        for line in lines:
            try:
                rec = json.loads(line)
            except ValueError:
                continue  # a line cut by a kill
            if rec.get("end"):
                hit = by_key.get((rec["group"], rec["seq"]))
                if hit is not None:
                    hit["t_end"] = rec["t_end"]
            else:
                rec["t_end"] = None
                by_key[(rec["group"], rec["seq"])] = rec
                rows.append(rec)
    return rows
