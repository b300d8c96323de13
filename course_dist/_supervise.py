"""Launcher-side plumbing: stream per-rank output, kill process trees, and read what the ranks left behind.

Naive alternative (what ``torch.multiprocessing.spawn`` does): join the processes and, on the first non-zero
exit, raise with whatever the children printed. That names the rank whose exit was *noticed* first, which is
often a survivor failing with "Connection closed by peer" after the real culprit died; we instead rank
failures by cause (see ``is_secondary``) and by the time each rank recorded.
"""

from __future__ import annotations

import atexit
import os
import re
import signal
import sys
import threading
from typing import IO, Any

import psutil

# Errors a rank gets *because another rank failed* (gloo/NCCL peers going away, the store closing).
_SECONDARY = re.compile(
    r"Connection (closed|reset) by peer|Broken pipe|Connection refused|ECONNRESET|EPIPE"
    r"|NCCL communicator was aborted"
    r"|Socket Timeout|recvValue failed|Read error|Failed to recv|Connection timed out|connectFullMesh failed",
    re.IGNORECASE,
)


def is_secondary(message: str) -> bool:
    """True when an error text looks like the consequence of a peer's failure, not a root cause."""
    return bool(_SECONDARY.search(message or ""))


def describe_exit(code: int | None) -> tuple[str, str | None]:
    """('killed by SIGKILL', 'SIGKILL') for negative exit codes, ('exit code 3', None) otherwise."""
    if code is None:
        return "still running", None
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name}", name
    return f"exit code {code}", None


class Tailer:
    """Follows ``out.<rank>``/``err.<rank>``; re-emits complete lines as ``[rank N] ...`` in our streams.

    Runs in the launcher's thread (polled from the wait loop), so in a notebook the lines land in the
    running cell.
    """

    def __init__(self, run_dir: str, world_size: int, stream: bool) -> None:
        self.run_dir, self.world_size, self.stream = run_dir, world_size, stream
        self._pos: dict[tuple[str, int], int] = {}
        self._partial: dict[tuple[str, int], str] = {}
        self._lock = threading.Lock()

    def _target(self, name: str) -> IO[str]:
        return sys.stdout if name == "out" else sys.stderr

    def poll(self, final: bool = False) -> None:
        with self._lock:
            for name in ("out", "err"):
                for r in range(self.world_size):
                    self._poll_one(name, r, final)

    def _poll_one(self, name: str, r: int, final: bool) -> None:
        key = (name, r)
        try:
            with open(os.path.join(self.run_dir, f"{name}.{r}"), "rb") as f:
                f.seek(self._pos.get(key, 0))
                data = f.read()
        except OSError:
            return
        if not data and not (final and self._partial.get(key)):
            return
        self._pos[key] = self._pos.get(key, 0) + len(data)
        text = self._partial.get(key, "") + data.decode("utf-8", errors="replace")
        lines = text.split("\n")
        self._partial[key] = "" if final else lines.pop()
        if final and lines and lines[-1] == "":
            lines.pop()
        if self.stream and lines:
            out = self._target(name)
            out.write("".join(f"[rank {r}] {line}\n" for line in lines))
            out.flush()

    def text(self, name: str, r: int) -> str:
        try:
            with open(os.path.join(self.run_dir, f"{name}.{r}"), encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return ""


def _tree(pids: list[int]) -> list[psutil.Process]:
    procs: list[psutil.Process] = []
    for pid in pids:
        try:
            p = psutil.Process(pid)
            procs.extend([p, *p.children(recursive=True)])
        except psutil.Error:
            pass
    return procs


def kill_tree(pids: list[int], grace: float = 0.5) -> None:
    """SIGTERM the processes and their descendants, wait ``grace`` s, SIGKILL what is left, reap."""
    procs = _tree(pids)
    for p in procs:
        try:
            p.terminate()
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(procs, timeout=grace)
    for p in alive:
        try:
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=5)


# Every rank pid a launch started and has not yet seen exit: killed at interpreter exit, whatever happened.
LIVE: set[int] = set()


@atexit.register
def _kill_leftovers() -> None:
    if LIVE:
        kill_tree(sorted(LIVE), grace=0.2)


def read_stack(run_dir: str, r: int) -> str:
    """The faulthandler dump of rank r, without our parent-watch thread (noise in every dump)."""
    try:
        with open(os.path.join(run_dir, f"stack.{r}"), encoding="utf-8", errors="replace") as f:
            raw = f.read()
    except OSError:
        return ""
    blocks = re.split(r"\n(?=(?:Current thread|Thread) 0x)", raw.strip())
    keep = [b for b in blocks if not ("_worker.py" in b and "in watch" in b)]
    return "\n".join(keep).strip()


def indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def format_collective(rec: dict[str, Any] | None) -> str:
    if not rec:
        return "no collective entered yet"
    state = "returned" if rec.get("done") else "entered, not returned"
    shape = f" shape {rec['shape']}" if rec.get("shape") is not None else ""
    return f"{rec['op']} #{rec['seq']} ({rec['group']}){shape} at {rec['site']} ({state})"
