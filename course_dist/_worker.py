"""The rank side of ``launch``: what one child process does, in order (imported by the forkserver at start).

Order matters and each step says why:
1. stdout/stderr (fd 1 and 2, so C++ and gloo output too) go to per-rank files the launcher streams;
2. faulthandler: SIGUSR1 dumps every thread's Python stack to ``stack.<rank>`` (the launcher's timeout
   report), crashes (SIGSEGV, SIGABRT from gloo) print theirs to stderr; this works while blocked in C++;
3. a daemon thread watches the parent's pipe and ``os._exit``s when the launcher dies (a killed notebook
   kernel must not leave ranks behind; ``getppid()`` would name the forkserver, not the launcher);
4. the launcher's environment, sys.path and cwd *as of this launch* (a forkserver started earlier has stale
   ones);
5. ``torch.set_num_threads`` before any torch op (2 ranks x 2 threads on 2 cores halves throughput);
6. the process group on the launcher's TCPStore (port read from a file) under a per-launch prefix;
7. the function, then its result (or traceback) in ``result.<rank>``, written tmp+rename so a half-written
   file is never read; on error ``os._exit(1)`` at once so peers blocked on us get "connection closed"
   immediately.

Only the standard library is imported at module level: under spawn, step 2 must happen before
``import torch``.
"""

from __future__ import annotations

import faulthandler
import linecache
import os
import signal
import sys
import threading
import time
import traceback
from typing import Any


def _redirect(run_dir: str, rank: int) -> None:
    for fd, name in ((1, "out"), (2, "err")):
        f = os.open(os.path.join(run_dir, f"{name}.{rank}"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(f, fd)
        os.close(f)
    # Fresh line-buffered streams: under fork from a notebook, sys.stdout is ipykernel's (dead in the child).
    sys.stdout = open(1, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False)
    sys.stderr = open(2, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False)


def _watch_parent() -> None:
    import multiprocessing
    from multiprocessing.connection import wait

    parent = multiprocessing.parent_process()
    if parent is None or parent.sentinel is None:
        return
    sentinel = parent.sentinel

    def watch() -> None:
        wait([sentinel])
        os._exit(70)  # launcher gone: nobody will read our result; do not linger

    threading.Thread(target=watch, name="course_dist-parent-watch", daemon=True).start()


def _write_result(run_dir: str, rank: int, result: dict) -> None:
    import cloudpickle

    path = os.path.join(run_dir, f"result.{rank}")
    with open(path + ".tmp", "wb") as f:
        f.write(cloudpickle.dumps(result))
    os.replace(path + ".tmp", path)


def _flush() -> None:
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except Exception:
            pass


def _wait_for_port(run_dir: str, timeout: float) -> int:
    """The launcher writes its store's port after starting every rank (see launch.py for why)."""
    path, end = os.path.join(run_dir, "port"), time.monotonic() + timeout
    while True:
        try:
            with open(path) as f:
                return int(f.read())
        except (OSError, ValueError):
            if time.monotonic() > end:
                raise TimeoutError(f"the launcher never published its store port in {path}") from None
            time.sleep(0.002)


def _is_library(filename: str) -> bool:
    """Frames a student did not write: torch, site-packages, the standard library, course_dist itself."""
    f = filename.replace(os.sep, "/")
    return any(part in f for part in ("/site-packages/", "/lib/python3", "/course_dist/", "<frozen "))


def _format_tb(e: BaseException) -> str:
    """The traceback with the student's frames in full and every run of library frames folded to one line.

    The launcher's own frames (worker bootstrap, collective recorder) are dropped entirely; torch's are folded
    ("... 3 library frames: torch/distributed/distributed_c10d.py ...") so the line that called into torch is
    the last thing a student reads before the error itself.
    """
    te = traceback.TracebackException(type(e), e, e.__traceback__)
    ours = (os.path.join("course_dist", "_worker.py"), os.path.join("course_dist", "_record.py"))
    frames = [f for f in te.stack if not f.filename.endswith(ours)]
    out, run = ["Traceback (most recent call last):\n"], []

    def flush() -> None:
        if run:
            names = sorted({"/".join(f.filename.replace(os.sep, "/").split("/")[-2:]) for f in run})
            shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
            out.append(f"  [... {len(run)} library frame{'s' * (len(run) > 1)} folded: {shown}]\n")
            run.clear()

    for f in frames:
        if _is_library(f.filename):
            run.append(f)
            continue
        flush()
        out.extend(traceback.StackSummary.from_list([f]).format())
    flush()
    out.extend(te.format_exception_only())
    return "".join(out)


def main(spec: dict[str, Any]) -> None:
    rank, run_dir = spec["rank"], spec["run_dir"]
    _redirect(run_dir, rank)
    stack_file = open(os.path.join(run_dir, f"stack.{rank}"), "w")
    if hasattr(signal, "SIGUSR1"):  # POSIX; on Windows (spawn fallback) timeouts come without stacks
        faulthandler.register(signal.SIGUSR1, file=stack_file, all_threads=True)
    faulthandler.enable(file=sys.stderr, all_threads=True)
    open(os.path.join(run_dir, f"ready.{rank}"), "w").close()  # SIGUSR1 is now safe to send
    _watch_parent()

    os.environ.clear()
    os.environ.update(spec["env"])
    sys.path[:] = spec["sys_path"]
    os.chdir(spec["cwd"])
    for filename, lines in spec["linecache"].items():
        # notebook cells are not files: give tracebacks their source (mtime None: checkcache keeps it)
        linecache.cache[filename] = (sum(map(len, lines)), None, lines, filename)

    try:
        import torch

        torch.set_num_threads(spec["threads"])
        import cloudpickle
        import torch.distributed as dist

        from course_dist import _log, _record, context

        _log.set_where(f"rank {rank}")
        _log.install_rank_handler()
        # TORCH_DISTRIBUTED_DEBUG is read at import, and the forkserver imported torch before this env existed
        dist.set_debug_level_from_env()
        from datetime import timedelta

        world = spec["world_size"]
        if spec["backend"] == "nccl":
            torch.cuda.set_device(rank)
            dev = torch.device("cuda", rank)
        else:
            dev = torch.device("cpu")
        context.STATE.rank, context.STATE.world_size = rank, world
        context.STATE.device, context.STATE.backend, context.STATE.run_dir = dev, spec["backend"], run_dir

        timeout = timedelta(seconds=spec["pg_timeout"])
        port = _wait_for_port(run_dir, spec["pg_timeout"])
        store = dist.TCPStore(spec["store_host"], port, is_master=False, timeout=timeout)
        # A per-launch prefix: keys of concurrent or earlier launches can never be mistaken for ours.
        store = dist.PrefixStore(spec["launch_id"], store)
        dist.init_process_group(spec["backend"], store=store, rank=rank, world_size=world, timeout=timeout)
        _record.install(run_dir, rank, spec["trace"])

        fn, args, kwargs = cloudpickle.loads(spec["payload"])
        value = fn(*args, **kwargs)
        try:
            payload = cloudpickle.dumps(value)
        except Exception as e:
            raise TypeError(
                f"rank {rank}: the return value ({type(value).__name__}) cannot be pickled back to the "
                f"launcher: {e}. Return plain data (numbers, lists, CPU tensors, DataFrames)."
            ) from e
        _write_result(run_dir, rank, {"ok": True, "value": payload, "t": time.time()})
        _flush()
        if world > 1:
            # Leave together. A rank that returns first and exits can cut a peer that is still inside gloo's
            # connectFullMesh ("Connection closed by peer" in init_process_group: 1 in ~120 launches here).
            # On the store, not the process group: a process-group barrier would pair with a peer's pending
            # (mismatched) collective and hide the bug the trace should show.
            if store.add("course_dist/exit_count", 1) == world:
                store.set("course_dist/exit_all", "1")
            store.wait(["course_dist/exit_all"])
        if dist.is_initialized():
            dist.destroy_process_group()
    except BaseException as e:  # noqa: B036 - report KeyboardInterrupt/SystemExit from user code too
        t = time.time()
        tb = _format_tb(e)
        try:
            _write_result(
                run_dir,
                rank,
                {"ok": False, "t": t, "exc_type": type(e).__name__, "message": str(e), "traceback": tb},
            )
        except BaseException:  # noqa: B036 - no result file: the stderr stream is the only report left
            sys.stderr.write(tb)
            raise
        finally:
            # The launcher reports this traceback (headline first); streaming it too would print it twice,
            # above the headline.
            _flush()
            os._exit(1)
    _flush()
