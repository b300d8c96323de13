"""The time a graded notebook cell has left, so that a launch inside it times out before the cell does.

The grader interrupts a cell that runs past its per-cell limit (nbclient's ``timeout``); the interrupt reaches
the launcher as ``KeyboardInterrupt`` and the grade reason loses the diagnosis (which rank hung, where). The
grader passes that limit to its kernels in ``COURSE_CELL_TIMEOUT_S`` (``autograder.config.kernel_environ``);
:func:`clamp` shortens a launch's timeout to what the cell has left minus :data:`MARGIN_S`, the time the
launcher needs after its own deadline to collect stacks, tear the ranks down and get the error reply out.

When did the cell start? The request that runs it carries the time the client sent it (``header.date`` of
the kernel's parent message): nbclient starts its per-cell clock right after sending, so that time is never
later than the clock's start, even when a loaded kernel picks the request up seconds later. Where there is no
such header (an IPython without ipykernel, or a thread that has no parent message), the ``pre_run_cell``
event's time stands in; it is registered when this module is first imported inside IPython. Outside
IPython, or without the variable (a student's own JupyterLab, torchrun, a rank), nothing is clamped.
"""

from __future__ import annotations

import os
import sys
import time
from datetime import datetime
from typing import Any

ENV = "COURSE_CELL_TIMEOUT_S"
# Seconds the launcher needs after its own deadline until the cell's error reply has left the kernel, measured
# with bench/bench_timeout_margin.py (last rank hung in time.sleep, the others in all_reduce; 2 cores, two
# ``yes > /dev/null`` loops beside other jobs, load average 8.7; 5 hangs per row): launcher side (stack
# dumps, SIGTERM, reap, read, raise) max 0.37 s at world 2 and 0.45 s at world 4; deadline to the kernel's
# execute_reply (IPython's traceback included) max 0.53 s at world 2 and 0.79 s at world 4. Those hangs used
# none of the bounded waits, which a rank can use up: 2.0 s for its stack dump and 0.5 s for SIGTERM before
# SIGKILL (course_dist._wait, _supervise). 5 s = those 2.5 s + 3x the worst measured 0.79 s.
MARGIN_S = 5.0
# Never less than this: a cell already past its budget gets a launch that still has a chance to finish (the
# cell's own interrupt then decides) rather than one that times out before its ranks could start.
MIN_TIMEOUT_S = 1.0

_pre_run_at: float | None = None  # time.monotonic() of the latest pre_run_cell event
_registered = False


def cell_timeout() -> float | None:
    """The grader's per-cell limit in seconds (``$COURSE_CELL_TIMEOUT_S``), or None when it is not set."""
    raw = os.environ.get(ENV, "")
    if not raw.strip():
        return None
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{ENV}={raw!r} is not a number of seconds") from None
    if not value > 0 or value == float("inf"):
        raise ValueError(f"{ENV}={raw!r} must be a positive, finite number of seconds")
    return value


def _ipython() -> Any:
    mod = sys.modules.get("IPython")
    if mod is None:
        return None
    try:
        return mod.get_ipython()
    except Exception:  # an IPython too broken to answer: behave as outside IPython
        return None


def _on_pre_run_cell(*_args: Any) -> None:
    global _pre_run_at
    _pre_run_at = time.monotonic()


def register() -> None:
    """Record the start of every later cell (idempotent; nothing outside IPython)."""
    global _registered
    ip = _ipython()
    if _registered or ip is None:
        return
    try:
        ip.events.register("pre_run_cell", _on_pre_run_cell)
    except Exception:  # a shell without events: the parent header still works where there is one
        return
    _registered = True


def _header_start() -> float | None:
    """``time.monotonic()`` at which the client sent the request for the running cell, or None."""
    ip = _ipython()
    parent = getattr(ip, "parent_header", None) if ip is not None else None
    date = (parent or {}).get("header", {}).get("date") if isinstance(parent, dict) else None
    if isinstance(date, str):
        try:
            date = datetime.fromisoformat(date.replace("Z", "+00:00"))
        except ValueError:
            return None
    if not isinstance(date, datetime) or date.tzinfo is None:
        return None
    ago = max(0.0, time.time() - date.timestamp())  # a clock set back between send and now: count 0
    return time.monotonic() - ago


def cell_started() -> float | None:
    """``time.monotonic()`` at which the running cell started (see the module docstring), or None."""
    start = _header_start()
    return start if start is not None else _pre_run_at


def clamp(timeout: float) -> tuple[float, str | None]:
    """``(timeout to use, note)``: ``timeout``, or what the running cell has left minus :data:`MARGIN_S`
    when that is shorter (never below :data:`MIN_TIMEOUT_S`); the note says why it was shortened."""
    budget = cell_timeout()
    if budget is None or _ipython() is None:
        return timeout, None
    start = cell_started()
    used = 0.0 if start is None else max(0.0, time.monotonic() - start)
    left = budget - used - MARGIN_S
    if timeout <= left:
        return timeout, None
    eff = max(MIN_TIMEOUT_S, left)
    note = (
        f"shortened from {timeout:g} s: the grader stops this cell after {budget:g} s, {used:.1f} s were "
        f"used, {MARGIN_S:g} s are kept for the report"
    )
    return eff, note


register()
