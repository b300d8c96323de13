"""The launcher's wait loop: results, the first failure, or the timeout, and never a surviving child.

Failure policy (why it looks like this):
- the first failure wins, judged by *cause* then time: a rank that raised something other than a
  peer-connection error, or died without a result, is a root cause; "Connection closed by peer" in a survivor
  is a consequence;
- after the first failure the others get 1 s to finish or fail on their own (gloo peers of a dead rank error
  out within ~0.02 s), then their whole process trees get SIGTERM, 0.5 s, SIGKILL;
- on timeout every live rank gets SIGUSR1 (faulthandler dumps its Python stacks even while blocked in C++),
  the launcher waits for the dumps, then kills, then reports stacks plus the last collective each rank
  entered.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any

from course_dist import _record
from course_dist._supervise import (
    LIVE,
    Tailer,
    describe_exit,
    format_collective,
    indent,
    is_secondary,
    kill_tree,
    read_stack,
)
from course_dist.errors import LaunchTimeout, RankError

FAILURE_GRACE_S = 1.0
STACK_WAIT_S = 2.0


@dataclass
class Outcome:
    values: list[Any]
    stdout: list[str]
    stderr: list[str]
    trace: Any


def _read_result(run_dir: str, r: int) -> dict | None:
    import cloudpickle

    try:
        with open(os.path.join(run_dir, f"result.{r}"), "rb") as f:
            return cloudpickle.load(f)
    except (OSError, EOFError):
        return None


def _trace_frame(run_dir: str, world: int, enabled: bool) -> Any:
    if not enabled:
        return None
    from course_dist.trace import to_frame

    return to_frame(_record.read_trace(run_dir, world), world)


def _first_line(text: str, limit: int = 400) -> str:
    """The first line of a message, cut only past ``limit`` and then at a word boundary (never mid-word)."""
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    if len(line) <= limit:
        return line
    cut = line.rfind(" ", 0, limit)
    return line[: cut if cut > limit // 2 else limit].rstrip() + " [...]"


class _Run:
    def __init__(self, procs: list[Any], run_dir: str, world: int, stream: bool) -> None:
        self.procs, self.run_dir, self.world = procs, run_dir, world
        self.tailer = Tailer(run_dir, world, stream)
        self.ended_at: dict[int, float] = {}  # rank -> wall time the launcher saw it exit

    def update(self) -> bool:
        """Record exits; True if some rank failed (non-zero exit, or exit 0 without a result)."""
        failed = False
        for r, p in enumerate(self.procs):
            if r not in self.ended_at and p.exitcode is not None:
                self.ended_at[r] = time.time()
                LIVE.discard(p.pid)
            if r in self.ended_at and (
                p.exitcode != 0 or not os.path.exists(os.path.join(self.run_dir, f"result.{r}"))
            ):
                failed = True
        return failed

    def live(self) -> list[int]:
        return [r for r in range(self.world) if r not in self.ended_at]

    def wait(self, seconds: float) -> None:
        sentinels = [self.procs[r].sentinel for r in self.live()]
        if sentinels and seconds > 0:
            wait(sentinels, timeout=seconds)

    def kill(self, ranks: list[int]) -> None:
        if ranks:
            kill_tree([self.procs[r].pid for r in ranks])
        for r in ranks:
            self.procs[r].join(timeout=5)
            LIVE.discard(self.procs[r].pid)
        self.tailer.poll(final=True)

    def texts(self) -> tuple[list[str], list[str]]:
        return (
            [self.tailer.text("out", r) for r in range(self.world)],
            [self.tailer.text("err", r) for r in range(self.world)],
        )


def supervise(
    procs: list[Any], run_dir: str, world: int, timeout: float, stream: bool, trace: bool
) -> Outcome:
    __tracebackhide__ = True  # IPython folds this frame: the student sees their cell, then the error
    run = _Run(procs, run_dir, world, stream)
    deadline = time.monotonic() + timeout
    while True:
        failed = run.update()
        run.tailer.poll()
        if failed:
            _fail(run, trace)
        if not run.live():
            break
        now = time.monotonic()
        if now >= deadline:
            _timeout(run, timeout, trace)
        run.wait(min(0.05, deadline - now))
    run.tailer.poll(final=True)
    results = [_read_result(run_dir, r) for r in range(world)]
    import cloudpickle

    values = [cloudpickle.loads(res["value"]) for res in results]  # type: ignore[index]
    out, err = run.texts()
    return Outcome(values, out, err, _trace_frame(run_dir, world, trace))


def _fail(run: _Run, trace: bool) -> None:
    __tracebackhide__ = True
    grace_end = time.monotonic() + FAILURE_GRACE_S
    while run.live() and time.monotonic() < grace_end:
        run.wait(min(0.05, grace_end - time.monotonic()))
        run.update()
    killed = run.live()
    run.kill(killed)
    run.update()
    results = {r: _read_result(run.run_dir, r) for r in range(run.world)}

    candidates = []  # (is_consequence, time, rank)
    for r in range(run.world):
        res, code = results[r], run.procs[r].exitcode
        if r in killed or (res is not None and res["ok"] and code == 0):
            continue
        if res is not None and not res["ok"]:
            candidates.append((is_secondary(res["message"]), res["t"], r))
        else:
            candidates.append((False, run.ended_at.get(r, time.time()), r))
    root = (
        min(candidates)[2] if candidates else next(r for r in range(run.world) if run.procs[r].exitcode != 0)
    )

    def state(r: int) -> str:
        res, code = results[r], run.procs[r].exitcode
        last = format_collective(_record.read_last(run.run_dir, r))
        if res is not None and res["ok"]:
            return "returned normally" + (" (was waiting for the others to finish)" if r in killed else "")
        if r in killed:
            return f"still running, killed by the launcher (last collective: {last})"
        if res is not None:
            why = " (a consequence of the failure above)" if is_secondary(res["message"]) else ""
            return f"raised {res['exc_type']}: {_first_line(res['message'])}{why}"
        return f"died: {describe_exit(code)[0]} (last collective: {last})"

    res, code = results[root], run.procs[root].exitcode
    out, err = run.texts()
    others = {r: state(r) for r in range(run.world) if r != root}
    if res is not None and not res["ok"]:
        head = f"rank {root} raised {res['exc_type']}: {_first_line(res['message'])}"
        remote_tb, exc_type, signal_name = res["traceback"], res["exc_type"], None
    else:
        how, signal_name = describe_exit(code)
        head = f"rank {root} died: {how}" + ("" if code else " without returning a result (os._exit?)")
        tail = "\n".join(err[root].splitlines()[-25:])
        remote_tb = (
            f"(no Python traceback: the process was killed or exited abruptly; last collective: "
            f"{format_collective(_record.read_last(run.run_dir, root))})\n--- last stderr lines ---\n{tail}"
        )
        exc_type = None
    if res is not None and not res["ok"] and is_secondary(res["message"]):
        early = [r for r in range(run.world) if results[r] is not None and results[r]["ok"]]
        head += (
            "\n  (this error is itself a consequence: a peer left while rank "
            f"{root} waited in a collective{'; ranks ' + str(early) + ' returned early' if early else ''}. "
            "Usually the ranks called different collectives or shapes: rerun with trace=True and call "
            "course_dist.first_divergence(err.trace).)"
        )
    msg = (
        f"{head}\n"
        + "".join(f"  rank {r}: {s}\n" for r, s in others.items())
        + f"--- remote traceback of rank {root} ---\n{remote_tb.rstrip()}"
    )
    raise RankError(
        msg,
        rank=root,
        exitcode=code,
        signal_name=signal_name,
        exc_type=exc_type,
        remote_traceback=remote_tb,
        others=others,
        stdout=out,
        stderr=err,
        trace=_trace_frame(run.run_dir, run.world, trace),
    )


def _timeout(run: _Run, timeout: float, trace: bool) -> None:
    # ranks that returned wait for the others on the store before exiting: they count as finished
    finished = [r for r in range(run.world) if os.path.exists(os.path.join(run.run_dir, f"result.{r}"))]
    live = [r for r in run.live() if r not in finished]
    asked = []
    for r in live:
        ready = os.path.exists(os.path.join(run.run_dir, f"ready.{r}"))  # before that, SIGUSR1 would kill it
        if ready and hasattr(signal, "SIGUSR1"):
            try:
                os.kill(run.procs[r].pid, signal.SIGUSR1)
                asked.append(r)
            except ProcessLookupError:
                pass
    _wait_for_dumps(run.run_dir, asked)
    run.kill(run.live())
    stacks = {
        r: read_stack(run.run_dir, r) or "(no stack dump: the rank had not started Python yet)" for r in live
    }
    last = {r: _record.read_last(run.run_dir, r) for r in range(run.world)}
    out, err = run.texts()
    msg = (
        f"launch timed out after {timeout:g} s (the launcher's timeout): ranks {live} still running, "
        f"ranks {finished} finished.\nLast collective per rank:\n"
        + "".join(f"  rank {r}: {format_collective(last[r])}\n" for r in range(run.world))
        + "".join(
            f"--- stack of rank {r} (most recent call first) ---\n{indent(stacks[r], '  ')}\n" for r in live
        )
        + "Ranks waiting in different collectives, or one rank outside any, is a mismatch: rerun with "
        "trace=True and call course_dist.first_divergence(err.trace)."
    )
    raise LaunchTimeout(
        msg,
        timeout=timeout,
        stacks=stacks,
        last_collective=last,
        finished=finished,
        stdout=out,
        stderr=err,
        trace=_trace_frame(run.run_dir, run.world, trace),
    )


def _wait_for_dumps(run_dir: str, ranks: list[int]) -> None:
    """faulthandler writes the dump from the signal handler; wait until every file is non-empty and stable."""
    end = time.monotonic() + STACK_WAIT_S
    sizes: dict[int, int] = {}
    while time.monotonic() < end:
        now = {r: _size(os.path.join(run_dir, f"stack.{r}")) for r in ranks}
        if all(now.values()) and now == sizes:
            return
        sizes = now
        time.sleep(0.05)


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
