"""Crash drills for lab 04 exercise 2: SIGKILL a checkpoint writer at every file operation, corrupt files.

Never a solution: this file only *watches* a save. In a forked child it wraps ``open``/``io.open``
(write modes), ``os.open``/``os.write``/``os.fsync``/``os.replace``/``os.rename``/``os.mkdir``/
``os.unlink``/``os.remove``/``os.rmdir`` for paths under the checkpoint root, numbers each operation, and
SIGKILLs the child *before* operation k (a ``write`` is cut in half first: the page cache then holds a torn
file). The parent then calls the student's loader and checks the invariants a crash must never break.
Deterministic: same save, same numbering.

The on-disk format every lab-04 exercise shares (the oracle below checks it, independent of any student
code)::

    root/step-00000012/<name>.pt        one torch.save'd part per file (rank files: rank00-<name>.pt, ...)
    root/step-00000012/manifest.json    {"step": 12, "files": {"<file>": {"bytes": n, "sha256": hex}}, ...}
    root/latest                         text: "step-00000012"
"""

from __future__ import annotations

import builtins
import hashlib
import io
import json
import os
import select
import signal
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

import course_dist

MANIFEST = "manifest.json"
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


@dataclass
class Loaded:
    """What a checkpoint loader returns: the step, the directory, the parts, why newer ones were skipped."""

    step: int
    path: Path
    parts: dict[str, Any]
    skipped: dict[str, str] = field(default_factory=dict)  # directory name -> reason


def step_dir_name(step: int) -> str:
    return f"step-{step:08d}"


def demo_parts(step: int, rank: int = 0) -> dict[str, Any]:
    """Deterministic stand-in state for ``step`` (different bytes for every step and rank)."""
    g = torch.Generator().manual_seed(1000 * step + rank)
    return {
        "model": {"w": torch.randn(64, 64, generator=g), "b": torch.randn(64, generator=g)},
        "optimizer": {"exp_avg": torch.randn(64, 64, generator=g), "step": step},
        "meta": {"step": step, "rank": rank, "rng": np.random.RandomState(step).get_state()},
    }


def same(a: Any, b: Any) -> bool:
    """Deep equality for checkpoint parts (tensors bitwise, arrays elementwise)."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and torch.equal(a.cpu(), b.cpu())
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return isinstance(b, list | tuple) and len(a) == len(b) and all(map(same, a, b))
    return a == b


def verify_dir(path: str | os.PathLike, world_size: int | None = None) -> str | None:
    """The drills' oracle: None if ``path`` is a complete checkpoint, else the reason it is not."""
    path = Path(path)
    try:
        manifest = json.loads((path / MANIFEST).read_text())
        files = manifest["files"]
    except FileNotFoundError:
        return "no manifest"
    except (ValueError, KeyError, TypeError) as e:
        return f"unreadable manifest ({e})"
    for name, meta in files.items():
        f = path / name
        if not f.is_file():
            return f"{name} listed in the manifest but missing"
        data = f.read_bytes()
        if len(data) != meta["bytes"] or hashlib.sha256(data).hexdigest() != meta["sha256"]:
            return f"{name}: size or sha256 does not match the manifest"
    if world_size is not None:
        for r in range(world_size):
            if not any(n.startswith(f"rank{r:02d}-") for n in files):
                return f"manifest lists no file of rank {r} (world size {world_size})"
    return None


# ---- recording and killing file operations -----------------------------------------------------------------
class _Ops:
    """Counts file operations under ``root``; SIGKILLs this process before operation ``kill_at``."""

    def __init__(self, root: Path, kill_at: int | None, log_fd: int | None) -> None:
        self.root = str(root.resolve())
        self.kill_at, self.log_fd, self.n = kill_at, log_fd, 0
        self.fds: dict[int, str] = {}
        self.records: list[dict] = []
        self.saved: dict[tuple[Any, str], Any] = {}

    def rel(self, path: Any, dir_fd: int | None = None) -> str | None:
        if isinstance(path, int):
            return None
        p = os.fspath(path)
        if isinstance(p, bytes):
            p = p.decode()
        if dir_fd is not None:
            if dir_fd not in self.fds:
                return None
            p = os.path.join(self.root, self.fds[dir_fd], p)
        p = os.path.abspath(p)
        if p != self.root and not p.startswith(self.root + os.sep):
            return None
        return os.path.relpath(p, self.root)

    def hit(
        self, kind: str, path: str | None, src: str | None = None, half: Callable[[], None] | None = None
    ):
        if path is None:
            return
        self.n += 1
        rec = {"n": self.n, "op": kind, "path": path, "src": src}
        self.records.append(rec)
        if self.log_fd is not None:
            self.saved[(os, "write")](self.log_fd, (json.dumps(rec) + "\n").encode())
        if self.n == self.kill_at:
            if half is not None:
                half()
            os.kill(os.getpid(), signal.SIGKILL)

    def install(self, namespaces: tuple[dict, ...] = ()) -> None:
        """Patch os/builtins/io, and ``open`` in ``namespaces`` (IPython puts its own ``open`` into the
        notebook's globals, and cloudpickle carries it into ranks: patching the builtin alone misses it)."""
        ops = self
        real = {
            name: getattr(os, name)
            for name in (
                "open",
                "write",
                "close",
                "fsync",
                "replace",
                "rename",
                "mkdir",
                "unlink",
                "remove",
                "rmdir",
            )
        }
        real_open = builtins.open
        self.saved = {(os, k): v for k, v in real.items()} | {
            (builtins, "open"): real_open,
            (io, "open"): io.open,
        }

        class _File:
            def __init__(self, f: Any, rel: str) -> None:
                self._f, self._rel = f, rel

            def write(self, data: Any) -> int:
                def half() -> None:
                    self._f.write(data[: len(data) // 2])
                    self._f.flush()

                ops.hit("write", self._rel, half=half)
                return self._f.write(data)

            def flush(self) -> None:
                ops.hit("flush", self._rel)
                self._f.flush()

            def close(self) -> None:
                if not self._f.closed:
                    ops.hit("close", self._rel)
                self._f.close()

            def __enter__(self) -> _File:
                return self

            def __exit__(self, *exc: Any) -> None:
                self.close()

            def __getattr__(self, name: str) -> Any:
                return getattr(self._f, name)

        def open_(file: Any, mode: str = "r", *a: Any, **kw: Any) -> Any:
            rel = ops.rel(file)
            if rel is None or not any(c in mode for c in "wax+"):
                return real_open(file, mode, *a, **kw)
            ops.hit("open", rel)
            f = real_open(file, mode, *a, **kw)
            ops.fds[f.fileno()] = rel
            return _File(f, rel)

        def os_open(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
            rel = ops.rel(path, dir_fd)
            if rel is not None and flags & _WRITE_FLAGS:
                ops.hit("open", rel)
            fd = real["open"](path, flags, mode, dir_fd=dir_fd)
            if rel is not None:
                ops.fds[fd] = rel
            return fd

        def os_write(fd: int, data: Any) -> int:
            def half() -> None:
                real["write"](fd, bytes(data)[: len(data) // 2])

            ops.hit("write", ops.fds.get(fd), half=half)
            return real["write"](fd, data)

        def os_close(fd: int) -> None:
            ops.fds.pop(fd, None)
            real["close"](fd)

        def os_fsync(fd: Any) -> None:
            num = fd if isinstance(fd, int) else fd.fileno()
            ops.hit("fsync", ops.fds.get(num))
            real["fsync"](fd)

        def renamer(name: str) -> Callable:
            def f(
                src: Any, dst: Any, *, src_dir_fd: int | None = None, dst_dir_fd: int | None = None
            ) -> None:
                ops.hit("rename", ops.rel(dst, dst_dir_fd), src=ops.rel(src, src_dir_fd))
                real[name](src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)

            return f

        def simple(name: str, kind: str) -> Callable:
            def f(path: Any, *a: Any, dir_fd: int | None = None, **kw: Any) -> Any:
                ops.hit(kind, ops.rel(path, dir_fd))
                return real[name](path, *a, dir_fd=dir_fd, **kw)

            return f

        builtins.open = io.open = open_
        for ns in namespaces:
            if "open" in ns and ns["open"] is not open_:
                self.saved[(id(ns), "open")] = (ns, ns["open"])
                ns["open"] = open_
        os.open, os.write, os.close, os.fsync = os_open, os_write, os_close, os_fsync
        os.replace, os.rename = renamer("replace"), renamer("rename")
        os.mkdir = simple("mkdir", "mkdir")
        os.unlink, os.remove, os.rmdir = (
            simple("unlink", "unlink"),
            simple("remove", "unlink"),
            simple("rmdir", "rmdir"),
        )

    def uninstall(self) -> None:
        for (mod, name), fn in self.saved.items():
            if isinstance(mod, int):  # a namespace dict: fn is (dict, original)
                fn[0][name] = fn[1]
            else:
                setattr(mod, name, fn)


@dataclass
class ChildResult:
    exitcode: int | None
    signal: int | None
    records: list[dict]
    error: str


def run_in_child(
    fn: Callable[[], Any],
    root: str | os.PathLike,
    *,
    kill_at: int | None = None,
    timeout: float = 60.0,
    namespaces: tuple[dict, ...] = (),
) -> ChildResult:
    """Run ``fn()`` in a forked child with file operations under ``root`` recorded (and killed at
    ``kill_at``)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never return into the caller's code
        code = 0
        try:
            os.close(r)
            sys.stdout = sys.stderr = io.StringIO()  # a forked kernel's streams belong to the parent
            ops = _Ops(Path(root), kill_at, w)
            ops.install(namespaces)
            try:
                fn()
            finally:
                ops.uninstall()
        except BaseException:
            os.write(w, (json.dumps({"error": traceback.format_exc()}) + "\n").encode())
            code = 1
        os._exit(code)
    os.close(w)
    chunks, deadline = [], time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                raise TimeoutError(
                    f"checkpoint writer (pid {pid}) still running after {timeout} s; killed it"
                )
            ready, _, _ = select.select([r], [], [], left)
            if ready:
                data = os.read(r, 65536)
                if not data:
                    break
                chunks.append(data)
    finally:
        os.close(r)
        _, status = os.waitpid(pid, 0)
    lines = [json.loads(line) for line in b"".join(chunks).decode().splitlines() if line.strip()]
    error = "".join(x["error"] for x in lines if "error" in x)
    records = [x for x in lines if "op" in x]
    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    return ChildResult(os.WEXITSTATUS(status) if os.WIFEXITED(status) else None, sig, records, error)


def _rank_save(save: Callable[..., Any], root: str, step: int, kill: dict[int, int] | None, keep: int) -> str:
    """Runs on every rank: save this rank's parts (rank 0 adds the shared ones); maybe die at op
    ``kill[rank]``."""
    r = course_dist.rank()
    ops = None
    if kill and r in kill:
        ops = _Ops(Path(root), kill[r], None)
        ops.install(namespaces_of(save))
    try:
        shared = {"model": demo_parts(step)["model"]} if r == 0 else None
        out = save(root, step, demo_parts(step, rank=r), shared=shared, keep=keep)
    finally:
        if ops is not None:
            ops.uninstall()
    return str(out)


def namespaces_of(fn: Any) -> tuple[dict, ...]:
    """The global namespaces a student's function resolves ``open`` in (its own, and __main__'s)."""
    out = [getattr(fn, "__globals__", {})]
    main = sys.modules.get("__main__")
    if main is not None and vars(main) is not out[0]:
        out.append(vars(main))
    return tuple(out)
