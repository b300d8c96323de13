"""Watch a checkpoint writer: record its file operations, SIGKILL it before operation k.

In a forked child (or a rank) it wraps ``open``/``io.open`` (write modes), ``os.open``/``os.write``/
``os.fsync``/``os.replace``/``os.rename``/``os.mkdir``/``os.unlink``/``os.remove``/``os.rmdir`` for paths
under the checkpoint root, numbers each operation, and SIGKILLs the process *before* operation k (a
``write`` is cut in half first: the page cache then holds a torn file). Same save, same numbering.

Each record: ``{"n", "op", "path", "src"}`` (paths relative to the root; ``"."`` is the root); an ``open``
also says whether it ``created`` the file; a ``rename`` lists the ``contents`` (files) of a directory it
moves, read from the file system at that moment. ``torch.save(obj, "path")`` writes through torch's C++
writer, which no Python wrapper sees: the file then shows up only in ``contents``, never as written or
fsynced. Never a solution.
"""

from __future__ import annotations

import builtins
import io
import json
import os
import select
import signal
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


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
        self, kind: str, path: str | None, src: str | None = None, half: Callable[[], None] | None = None,
        **extra: Any,
    ) -> None:
        if path is None:
            return
        self.n += 1
        rec = {"n": self.n, "op": kind, "path": path, "src": src, **extra}
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

            @property
            def rel(self) -> str:
                # the file's name now: a rename while it is open moves its records to the new name
                if not self._f.closed:
                    self._rel = ops.fds.get(self._f.fileno(), self._rel)
                return self._rel

            def write(self, data: Any) -> int:
                def half() -> None:
                    self._f.write(data[: len(data) // 2])
                    self._f.flush()

                ops.hit("write", self.rel, half=half)
                return self._f.write(data)

            def flush(self) -> None:
                ops.hit("flush", self.rel)
                self._f.flush()

            def close(self) -> None:
                if not self._f.closed:
                    ops.hit("close", self.rel)
                    ops.fds.pop(self._f.fileno(), None)
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
                f = real_open(file, mode, *a, **kw)
                # a file opened to be read can still be fsynced (open(path, "rb"), os.fsync(f.fileno())):
                # name its fd, and forget whatever an earlier, closed file left under that number
                if hasattr(f, "fileno") and not isinstance(file, int):
                    if rel is None:
                        ops.fds.pop(f.fileno(), None)
                    else:
                        ops.fds[f.fileno()] = rel
                return f
            ops.hit("open", rel, created=not os.path.exists(file))
            f = real_open(file, mode, *a, **kw)
            ops.fds[f.fileno()] = rel
            return _File(f, rel)

        def os_open(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
            rel = ops.rel(path, dir_fd)
            if rel is not None and flags & _WRITE_FLAGS:
                full = path if dir_fd is None else os.path.join(ops.root, ops.fds.get(dir_fd, ""), path)
                ops.hit("open", rel, created=not os.path.exists(full))
            fd = real["open"](path, flags, mode, dir_fd=dir_fd)
            if rel is not None:
                ops.fds[fd] = rel
            else:  # a number reused outside the root is not the file that had it before
                ops.fds.pop(fd, None)
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
                rel_src = ops.rel(src, src_dir_fd)
                # what the rename publishes, read from the file system now: also files that torch's C++
                # writer produced behind the wrappers' back (torch.save(obj, "path"))
                contents = None
                if rel_src is not None and os.path.isdir(os.path.join(ops.root, rel_src)):
                    base = os.path.join(ops.root, rel_src)
                    contents = sorted(os.path.relpath(os.path.join(d, f), base)
                                      for d, _, fs in os.walk(base) for f in fs)
                rel_dst = ops.rel(dst, dst_dir_fd)
                ops.hit("rename", rel_dst, src=rel_src, contents=contents)
                real[name](src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)
                if rel_src is not None and rel_dst is not None:
                    # a file still open under the old name (or inside a renamed folder) has the new one now:
                    # an fsync of their fd after the rename is recorded under the name it makes durable
                    for fd, rel in list(ops.fds.items()):
                        if rel == rel_src or rel.startswith(rel_src + "/"):
                            ops.fds[fd] = rel_dst + rel[len(rel_src):]

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


def namespaces_of(fn: Any) -> tuple[dict, ...]:
    """The global namespaces a student's function resolves ``open`` in (its own, and __main__'s)."""
    out = [getattr(fn, "__globals__", {})]
    main = sys.modules.get("__main__")
    if main is not None and vars(main) is not out[0]:
        out.append(vars(main))
    return tuple(out)
