"""Start methods for ``launch``: a private, torch-preloaded forkserver (default), fork (opt-in), spawn.

Why a forkserver (measured on a 2-core CPU box; `bench/results/launch.md` has the launch times):
- plain ``fork`` is fastest (~0.1 s) but inherits the parent's threads and locks: after the parent ran a
  multi-threaded torch op the child's first OpenMP region hangs, and forking while the parent hosts a TCPStore
  deadlocks ~1 in 4 launches at world 4 (glibc resolver lock). Neither can be fixed from the child.
- ``spawn`` is safe but each rank imports torch again (2.6-15 s).
- a forkserver is a fresh single-threaded interpreter that imported torch once; each rank is a fork of *it*,
  so it inherits no parent threads or locks and starts in ~0.1 s once the server is up (~2 s the first time).

Why a *private* server instead of ``multiprocessing.get_context("forkserver")``: the stdlib server is a global
singleton; if anything started it before us without torch preloaded, every launch pays the 3 s import again
(5-6 s measured), and the stdlib re-imports the parent's ``__main__`` in every child (a script without an ``if
__name__ == "__main__"`` guard would recurse). Our functions travel by value (cloudpickle), so the children
need neither: we keep our own ``ForkServer`` instance and strip ``__main__`` from the preparation data.
"""

from __future__ import annotations

import io
import multiprocessing
import os
import sys
import threading
from multiprocessing import context as mp_context
from multiprocessing import forkserver, popen_forkserver, reduction, spawn, util
from typing import Any

PRELOAD = ["torch", "torch.distributed", "torch._dynamo", "course_dist._worker"]  # optimizers import _dynamo
_server: forkserver.ForkServer | None = None
_server_lock = threading.Lock()


def _get_server() -> forkserver.ForkServer:
    global _server
    with _server_lock:
        if _server is None:
            _server = forkserver.ForkServer()
            _server.set_forkserver_preload(PRELOAD)  # before the server starts, or preloading does nothing
        return _server


def forkserver_pid() -> int | None:
    """Pid of the private forkserver if it runs (tests exclude it from "no surviving children" checks)."""
    return None if _server is None else _server._forkserver_pid


class _Popen(popen_forkserver.Popen):
    """stdlib forkserver Popen, but talking to our private server and not re-importing ``__main__``."""

    def _launch(self, process_obj: Any) -> None:
        prep_data = spawn.get_preparation_data(process_obj._name)
        # no __main__ re-import (functions travel by value), and no forced start method: inside a rank,
        # DataLoader workers should get the platform default (fork on Linux), as under torchrun
        for key in ("main_path", "init_main_from_name", "init_main_from_path", "start_method"):
            prep_data.pop(key, None)
        buf = io.BytesIO()
        mp_context.set_spawning_popen(self)
        try:
            reduction.dump(prep_data, buf)
            reduction.dump(process_obj, buf)
        finally:
            mp_context.set_spawning_popen(None)
        self.sentinel, w = _get_server().connect_to_new_process(self._fds)
        _parent_w = os.dup(w)  # the child watches this pipe to notice the parent's death
        self.finalizer = util.Finalize(self, util.close_fds, (_parent_w, self.sentinel))
        with open(w, "wb", closefd=True) as f:
            f.write(buf.getbuffer())
        self.pid = forkserver.read_signed(self.sentinel)


class _Process(mp_context.ForkServerProcess):
    # None: the child's _bootstrap does not force "forkserver" as its default start method (see _launch)
    _start_method = None

    @staticmethod
    def _Popen(process_obj: Any) -> _Popen:
        return _Popen(process_obj)


class _CourseForkServerContext(mp_context.ForkServerContext):
    Process = _Process


def get_context(start_method: str | None) -> tuple[str, Any]:
    """Resolve ``start_method`` (None: the safe default here) to (name, multiprocessing context)."""
    available = multiprocessing.get_all_start_methods()
    if start_method is None:
        start_method = "forkserver" if "forkserver" in available else "spawn"
    if start_method not in ("forkserver", "fork", "spawn"):
        raise ValueError(f"start_method must be None, 'forkserver', 'fork' or 'spawn', got {start_method!r}")
    if start_method not in available:
        raise ValueError(
            f"start_method {start_method!r} is not available on {sys.platform}; use one of {available}"
        )
    if start_method == "forkserver":
        return "forkserver", _CourseForkServerContext()
    return start_method, multiprocessing.get_context(start_method)
