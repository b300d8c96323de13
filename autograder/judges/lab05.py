"""Lab 05 judge rules (run-dependent numbers checked against the student's own measurements).

Called as ``rule(student_value, reference_value, **params)`` with the reference's params; raise AssertionError
naming the values.
"""

from __future__ import annotations

import math
import re
from typing import Any


def _number(x: Any, what: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(float(x)):
        raise AssertionError(f"{what}: expected a finite number, got {x!r}")
    return float(x)


def timeout_above_tail(student_value: Any, reference_value: Any = None, *, margin: float = 3.0) -> None:
    """``{"timeout", "step_s"}``: the timeout is above the largest of the student's own measured step times
    and at most ``margin`` x it (plus 1 ms): no false alarm on this run, and no needlessly late detection."""
    assert isinstance(student_value, dict), f"expected {{'timeout', 'step_s'}}, got {student_value!r}"
    timeout = _number(student_value.get("timeout"), "timeout")
    steps = student_value.get("step_s")
    assert isinstance(steps, (list, tuple)) and steps, f"step_s: expected a non-empty list, got {steps!r}"
    tail = max(_number(s, "step_s entry") for s in steps)
    assert timeout > tail, f"timeout {timeout:.4g} s is not above the measured tail {tail:.4g} s"
    assert timeout <= margin * tail + 1e-3, (
        f"timeout {timeout:.4g} s is more than {margin:g} x the measured tail {tail:.4g} s (late detection)")


def timeout_covers_phases(student_value: Any, reference_value: Any = None, *, margin: float = 3.0) -> None:
    """``{"timeout", "phase_s": {phase: [seconds, ...]}}``: the collective timeout is above every healthy wait
    the student measured (step tail, warm-up, checkpoint, eval), at most ``margin`` x the longest (+ 1 ms)."""
    assert isinstance(student_value, dict), f"expected {{'timeout', 'phase_s'}}, got {student_value!r}"
    timeout = _number(student_value.get("timeout"), "timeout")
    phases = student_value.get("phase_s")
    assert isinstance(phases, dict) and phases, f"phase_s: expected a non-empty dict, got {phases!r}"
    longest: dict[str, float] = {}
    for name, waits in phases.items():
        assert isinstance(waits, (list, tuple)) and waits, f"phase_s[{name!r}]: expected a non-empty list"
        longest[str(name)] = max(_number(w, f"phase_s[{name!r}] entry") for w in waits)
    name, top = max(longest.items(), key=lambda kv: kv[1])
    assert timeout > top, (f"timeout {timeout:.4g} s is not above the longest measured healthy wait: {name} "
                           f"{top:.4g} s (all: {longest})")
    assert timeout <= margin * top + 1e-3, (
        f"timeout {timeout:.4g} s is more than {margin:g} x the longest healthy wait {top:.4g} s ({name})")


def meets_deadline(student_value: Any, reference_value: Any = None) -> None:
    """``{"plan_time_s", "deadline_s"}``: the chosen plan reaches the target within the deadline."""
    assert isinstance(student_value, dict), f"expected {{'plan_time_s', 'deadline_s'}}, got {student_value!r}"
    t = _number(student_value.get("plan_time_s"), "plan_time_s")
    d = _number(student_value.get("deadline_s"), "deadline_s")
    assert t <= d, f"the plan takes {t:.4g} s, beyond the deadline {d:.4g} s"


_SECONDS = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?(?:e-?\d+)?)\s*s\b")


def states_seconds(student_value: Any, reference_value: Any = None, *, rtol: float = 0.25) -> None:
    """``{"note", "value"}``: the note states ``value`` seconds (a number followed by ``s``) within ``rtol``:
    a card field's number checked against the student's own measurement."""
    assert isinstance(student_value, dict), f"expected {{'note', 'value'}}, got {student_value!r}"
    note, value = student_value.get("note"), _number(student_value.get("value"), "value")
    assert isinstance(note, str), f"note: expected a str, got {note!r}"
    stated = [float(m) for m in _SECONDS.findall(note)]
    assert any(abs(x - value) <= rtol * abs(value) for x in stated), (
        f"the note should state {value:.4g} s (within {rtol:.0%}); it states {stated} s: {note!r}")


def near(student_value: Any, reference_value: Any = None, *, rtol: float = 0.01) -> None:
    """``{"value", "measured"}``: a card field within ``rtol`` of the measurement of the same run it names
    (the card's own 25 % would let another number, such as the exact B_simple 23 % away, pass)."""
    assert isinstance(student_value, dict), f"expected {{'value', 'measured'}}, got {student_value!r}"
    value = _number(student_value.get("value"), "value")
    measured = _number(student_value.get("measured"), "measured")
    assert abs(value - measured) <= rtol * abs(measured), (
        f"expected {measured:.4g} (within {rtol:.0%}), got {value:.4g}")
