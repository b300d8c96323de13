"""The process boundary in grading (issue 32): submitted code runs in a *student process*, never in the
trusted kernel that runs the course's cells, records evidence and measures.

The grader starts the student process in the submission's sandbox (``python -m course_dist.student --host
SOCKET``): an IPython shell that executes the answer cells and serves requests on a unix socket. The trusted
kernel (``COURSE_STUDENT_SOCKET`` set) reaches the student's code through it only:

- an answer cell becomes ``run_answer(grade_id, source, names)``: the source travels as a string and is
  executed over there; the exercise's *declared* names come back, functions and classes as
  :class:`StudentProxy`, plain values as data;
- calling a proxy sends pickled arguments over (the trusted side pickles; the student side never does) and
  receives a data-only result (:mod:`course_dist._wire`: no code runs on load);
- a ``launch`` whose function or arguments hold a proxy is run by the student process (its ranks live in the
  sandbox, where a proxy unpickles to the student's real object); other launches stay in the trusted kernel;
- :func:`student_side` runs a course function over there (a check that must hold the student's objects).

Without ``COURSE_STUDENT_SOCKET`` (a student's own JupyterLab, the reference run) nothing here is used:
answer cells run in the notebook's kernel as usual and :func:`student_side` calls its function in place.
"""

from __future__ import annotations

import inspect
import os
import re
import socket
import struct
import sys
import threading
from typing import Any

from course_dist import _wire

SOCKET_VAR = "COURSE_STUDENT_SOCKET"
SHARED_VAR = "COURSE_SHARED_TMPDIR"  # a directory both processes see at the same path (split runs only)
_NS: dict[str, Any] | None = None  # the student process's namespace (set only there)
_seen = threading.local()


# ---- framing -------------------------------------------------------------------------------------------
def _send(sock: socket.socket, data: bytes) -> None:
    sock.sendall(struct.pack(">Q", len(data)) + data)


def _recv(sock: socket.socket) -> bytes:
    head = _exactly(sock, 8)
    return _exactly(sock, struct.unpack(">Q", head)[0])


def _exactly(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise ConnectionError("the student process closed the connection (it died or was killed)")
        buf += chunk
    return bytes(buf)


# ---- trusted side ----------------------------------------------------------------------------------------
class StudentProcessError(RuntimeError):
    """The student process cannot answer (it died, was killed, or a request was interrupted)."""


class _Client:
    def __init__(self, path: str) -> None:
        self.path, self.sock, self.broken, self.pending = path, None, "", False

    def request(self, kind: str, *, raise_error: bool = True, **kw: Any) -> Any:
        """Send one request; returns the reply's value (``raise_error=False``: the whole reply, whose
        ``error`` the caller raises itself)."""
        import cloudpickle

        if self.broken:
            raise StudentProcessError(f"the student process does not answer any more: {self.broken}")
        if self.sock is None:
            self.sock = self._connect()
        if self.pending:  # an interrupted request's reply is still on its way: read it and drop it
            self._drain()
        _seen.flag = False
        try:
            _send(self.sock, cloudpickle.dumps((kind, kw)))
        except OSError as exc:
            self.broken = f"{type(exc).__name__} sending a {kind!r} request"
            raise StudentProcessError(f"the student process is gone: {exc}") from None
        try:
            reply = _wire.decode(_recv(self.sock))
        except KeyboardInterrupt:  # the cell's timeout: the grader interrupts the student process too
            self.pending = True
            raise
        except BaseException as exc:
            self.broken = f"{type(exc).__name__} during a {kind!r} request"
            raise
        for name, text in (("stdout", reply.get("stdout")), ("stderr", reply.get("stderr"))):
            if text:
                getattr(sys, name).write(text)
        if not raise_error:
            return reply
        if "error" in reply:
            raise reply["error"]
        return reply.get("value")

    def _connect(self, within: float = 120.0) -> socket.socket:
        """Connect, waiting for the host to listen: the grader starts it alongside this kernel, and waits for
        it before the first answer cell; a check that reaches it earlier (``student_side``) waits here."""
        import time

        deadline = time.monotonic() + within
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(self.path)
                return sock
            except (FileNotFoundError, ConnectionRefusedError):
                sock.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def _drain(self, within: float = 30.0) -> None:
        self.sock.settimeout(within)
        try:
            _recv(self.sock)
            self.pending = False
        except (OSError, ConnectionError) as exc:
            self.broken = f"it did not finish an interrupted request within {within:.0f} s ({exc})"
            raise StudentProcessError(f"the student process does not answer: {self.broken}") from None
        finally:
            self.sock.settimeout(None)


_CLIENT: _Client | None = None


def scratch_dir() -> str:
    """Where a notebook puts files that both its cells and the student's code use (checkpoints, logs): in a
    grading run a directory the trusted kernel and the student process share, otherwise the temp dir. The
    trusted side only lists and reads plain text there; anything that unpickles runs student-side."""
    import tempfile

    return os.environ.get(SHARED_VAR) or tempfile.gettempdir()


def active() -> bool:
    """True in the trusted kernel of a grading run (the student's code lives in another process)."""
    return bool(os.environ.get(SOCKET_VAR)) and _NS is None


def _client() -> _Client:
    global _CLIENT
    if _CLIENT is None:
        _CLIENT = _Client(os.environ[SOCKET_VAR])
    return _CLIENT


def _resolve(name: str) -> Any:
    if _NS is None:
        raise RuntimeError(
            f"{name!r} is the student's code: it runs only in the student process (course_dist.student)"
        )
    return _NS[name]


class StudentProxy:
    """The trusted side's handle on a name the student's answer cell defined."""

    def __init__(self, name: str, kind: str, doc: str = "") -> None:
        self.__name__ = self.__qualname__ = name
        self._kind, self.__doc__ = kind, doc

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _client().request("call", name=self.__name__, args=args, kwargs=kwargs)

    def __reduce__(self) -> tuple:
        _seen.flag = True  # a launch that ships this must run where the student's code lives
        return (_resolve, (self.__name__,))

    def __repr__(self) -> str:
        return f"<student {self._kind} {self.__name__}>"


def shipped_student_code() -> bool:
    """Whether a proxy was pickled since the last call (and reset the mark)."""
    seen, _seen.flag = bool(getattr(_seen, "flag", False)), False
    return seen


def run_answer(grade_id: str, source: str, names: list[str]) -> None:
    """(Trusted kernel) execute an answer cell in the student process and bind its declared ``names`` here."""
    __tracebackhide__ = True
    reply = _client().request("exec", raise_error=False, grade_id=grade_id, source=source, names=list(names),
                              context=_context(source))
    # bound even when the cell raised later on: a notebook keeps what a cell defined before its error
    user = _user_ns()
    for name, (kind, value, doc) in (reply.get("value") or {}).items():
        user[name] = StudentProxy(name, kind, doc) if kind in ("function", "class", "object") else value
        _names().holds(name, user[name])  # the student process has it: not sent back while unchanged
    if "error" in reply:
        raise reply["error"]


_WARMED: list[bool] = []


def _warm_launch() -> None:
    """(Trusted kernel, once, after the first launch the student process ran: its own forkserver is warm by
    then, so the two never import at once) start this kernel's torch-preloaded forkserver in the background
    where the notebook uses a labkit: its checks launch course-only ranks from here (a launch shipping no
    student code) and would otherwise pay the ~2 s cold start in the middle of a cell. Only
    ``ensure_running``: the server imports in its own process while the cells go on; ranks take env,
    sys.path and cwd per launch (``course_dist.launch``)."""
    if _WARMED:
        return
    _WARMED.append(True)
    if any(m.startswith("course_dist.labkit.") for m in sys.modules):
        try:
            from course_dist import _mp

            _mp._get_server().ensure_running()
        except Exception:  # noqa: BLE001, S110 - a warm-up only: a launch that needs it starts it again
            pass


def student_side(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Run the course function ``fn(*args, **kwargs)`` where the student's objects live and return its
    (data-only) result: in a grading run, the student process; otherwise here."""
    if not active():
        return fn(*args, **kwargs)
    return _client().request("run", fn=fn, args=args, kwargs=kwargs)


def on_student_side(fn: Any) -> Any:
    """Decorator for a check defined in a test cell that holds the student's objects across calls (captures
    a trainer's state, trains on, restores it): in a grading run it runs as a whole in the student process
    and returns data; anywhere else it is ``fn`` itself."""
    import functools

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        return student_side(fn, *args, **kwargs)

    return call


def _holds_proxy(value: Any, depth: int = 0) -> bool:
    if isinstance(value, StudentProxy):
        return True
    if depth >= 3:
        return False
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(_holds_proxy(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return any(_holds_proxy(v, depth + 1) for v in value.values())
    return False


def guarded(fn: Any) -> Any:
    """A course function that, called in the trusted kernel with a student's function or class among its
    arguments, runs as a whole in the student process (a check that holds the student's objects across
    calls - a trainer it captures and restores, a file it writes and reads - must run where they live)."""
    import functools

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if active() and (_holds_proxy(args) or _holds_proxy(kwargs)):
            return student_side(fn, *args, **kwargs)
        return fn(*args, **kwargs)

    call.__course_guarded__ = fn  # type: ignore[attr-defined]
    return call


class _LabkitHook:
    """(Trusted kernel of a split run) wraps the public functions of each ``course_dist.labkit.<lab>``
    package with :func:`guarded` as it is imported; nothing else of the module changes."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        import importlib.machinery

        if not re.fullmatch(r"course_dist\.labkit\.\w+", name):
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        real = spec.loader.exec_module

        def exec_module(module: Any) -> None:
            real(module)
            for attr, value in list(vars(module).items()):
                if (not attr.startswith("_") and inspect.isfunction(value)
                        and getattr(value, "__module__", "").startswith(name)):
                    setattr(module, attr, guarded(value))

        spec.loader.exec_module = exec_module
        return spec


def install() -> None:
    """Install :class:`_LabkitHook` in a split run's trusted kernel (``course_dist`` calls it on import)."""
    if active() and not any(isinstance(f, _LabkitHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _LabkitHook())


def forward_launch(fn: Any, options: dict[str, Any]) -> Any:
    """(Trusted kernel) a launch that ships student code, run by the student process."""
    from course_dist.launch import LaunchResult

    rec = _client().request("launch", fn=fn, options=options)
    _warm_launch()
    result = LaunchResult(rec["values"])
    for k in ("stdout", "stderr", "trace", "elapsed", "start_method", "backend"):
        setattr(result, k, rec.get(k))
    return result


def _user_ns() -> dict[str, Any]:
    try:
        from IPython import get_ipython

        ip = get_ipython()
        if ip is not None:
            return ip.user_ns
    except ImportError:
        pass
    return sys.modules["__main__"].__dict__


_SYNC: Any = None  # course_dist._sync.NameSync: what the student process holds of this kernel's names


def _names() -> Any:
    global _SYNC
    if _SYNC is None:
        from course_dist._sync import NameSync

        _SYNC = NameSync()
    return _SYNC


def _context(source: str | None = None) -> dict[str, Any]:
    """What the trusted kernel's cells defined that the answer cell ``source`` (or an earlier one) can read,
    changed since it was last sent (imports, course helpers, data), pickled over so the answer cell sees the
    names a notebook would give it (:mod:`course_dist._sync`). Proxies resolve to the student's own objects
    over there; what cannot be pickled is left out."""
    out = _names().context(_user_ns(), source)
    _seen.flag = False
    return out


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "--host":
        print("usage: python -m course_dist.student --host SOCKET  (internal to grading)", file=sys.stderr)
        sys.exit(2)
    from course_dist._student_host import host

    sys.exit(host(sys.argv[2]))
