"""The student process's side of the process boundary (issue 32): an IPython shell that executes the answer
cells and serves the trusted kernel's requests (:mod:`course_dist.student` is the other side). Requests arrive
pickled from the trusted kernel; every reply leaves as data only (:mod:`course_dist._wire`)."""

from __future__ import annotations

import contextlib
import io
import os
import socket
from typing import Any

from course_dist import _wire
from course_dist import student as _student
from course_dist.student import _recv, _send


def _describe(value: Any) -> tuple[str, Any, str]:
    doc = (getattr(value, "__doc__", "") or "") if callable(value) else ""
    if isinstance(value, type):
        return "class", None, doc
    if callable(value):
        return "function", None, doc
    try:
        _wire.encode(value)
        return "data", value, ""
    except _wire.WireError:
        return "object", None, ""


def _serve_one(shell: Any, kind: str, kw: dict) -> dict:
    import cloudpickle

    ns = shell.user_ns
    if kind == "exec":
        for name, blob in kw["context"].items():
            try:
                ns[name] = cloudpickle.loads(blob)
            except Exception:  # a course object that does not travel: the answer cell may not need it
                continue
        res = shell.run_cell(kw["source"], store_history=False, silent=False)
        found = {n: _describe(ns[n]) for n in kw["names"] if n in ns}
        if not res.success:
            err = res.error_in_exec or res.error_before_exec
            return {"value": found, "error": err}
        return {"value": found}
    if kind == "call":
        return {"value": ns[kw["name"]](*kw["args"], **kw["kwargs"])}
    if kind == "run":
        return {"value": kw["fn"](*kw["args"], **kw["kwargs"])}
    if kind == "launch":
        from course_dist.launch import launch

        r = launch(kw["fn"], **kw["options"])
        return {"value": {"values": list(r), "stdout": r.stdout, "stderr": r.stderr, "trace": r.trace,
                          "elapsed": r.elapsed, "start_method": r.start_method, "backend": r.backend}}
    raise ValueError(f"unknown request {kind!r}")


WARM_VAR = "COURSE_STUDENT_WARM"  # what to import ahead of the first request (the grader sets it)


def warm_up(what: str) -> None:
    """(Student process, once its socket listens: a request that arrives meanwhile waits in its buffer) pay
    what the answer cells will need while the trusted kernel starts and runs its set-up cells: ``torch``
    (the names synced before the first answer cell hold torch objects); ``launch``: also start the ranks'
    torch-preloaded forkserver (~2 s cold), whose imports run in its own process while this one serves.
    No thread: nothing imports concurrently with a request; nothing here runs submitted code."""
    parts = set(what.split(",")) & {"torch", "launch"}
    try:
        if parts:
            import torch  # noqa: F401
            import torch.distributed  # noqa: F401
        if "launch" in parts:  # its imports run in its own process while we serve
            from course_dist import _mp

            _mp._get_server().ensure_running()
    except (Exception, KeyboardInterrupt):  # noqa: BLE001, S110 - only a warm-up: a request needing it reports
        pass


def host(path: str) -> int:
    """(Student process) serve the trusted kernel's requests on the unix socket ``path`` until it closes."""
    import cloudpickle
    from IPython.core.interactiveshell import InteractiveShell

    class _Shell(InteractiveShell):
        def enable_gui(self, gui: Any = None) -> None:  # %matplotlib inline: no GUI event loop to start
            return None

    shell = _Shell.instance(colors="NoColor")
    _student._NS = shell.user_ns  # proxies unpickled here resolve to the student's objects
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path + ".tmp")
    srv.listen(1)
    os.replace(path + ".tmp", path)  # the grader waits for this name: the host is ready
    warm_up(os.environ.get(WARM_VAR, ""))
    conn, _ = srv.accept()
    while True:
        try:
            blob = _recv(conn)
        except ConnectionError:
            return 0
        out, err = io.StringIO(), io.StringIO()
        kind = "request"
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                kind, kw = cloudpickle.loads(blob)  # from the trusted kernel, never the other way
                reply = _serve_one(shell, kind, kw)
        except BaseException as exc:  # the student's error travels as data
            reply = {"error": exc}
        reply.update(stdout=out.getvalue(), stderr=err.getvalue())
        try:
            blob = _wire.encode(reply)
        except Exception as exc:  # noqa: BLE001 - whatever it is, the grader gets a reply, never a dead host
            blob = _wire.encode({"error": TypeError(f"the student's {kind} returned {exc}, which cannot be "
                                                    "sent to the grader"), "stdout": reply["stdout"],
                                 "stderr": reply["stderr"]})
        _send(conn, blob)


