"""Rules shared by every lab: ``card``, ``true``, ``between``, ``ge``, ``le`` (see ``autograder.judges``).

Used from a hidden test as ``ev.rule(key, value, rule="common.<name>", **params)``; the judge calls
``<name>(student_value, reference_value, **params)`` with the *reference's* params. For run-dependent numbers
(timings, a card checked against the student's own measurements) where an equality with the reference run
would be meaningless.
"""

from __future__ import annotations

import math
from typing import Any


def _number(x: Any, what: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(float(x)):
        raise AssertionError(f"{what}: expected a finite number, got {x!r}")
    return float(x)


def true(student_value: Any, reference_value: Any = None) -> None:
    """The student's value is exactly ``True`` (a check the cell computed from the student's own data)."""
    assert student_value is True, f"expected True, got {student_value!r}"


def between(student_value: Any, reference_value: Any = None, *, lo: float, hi: float) -> None:
    """``lo <= student_value <= hi``."""
    v = _number(student_value, "value")
    assert lo <= v <= hi, f"got {v!r}, expected between {lo!r} and {hi!r}"


def ge(
    student_value: Any, reference_value: Any = None, *, bound: float | None = None, rtol: float = 0.0
) -> None:
    """``student_value >= bound`` (default bound: the reference's value times ``1 - rtol``)."""
    v = _number(student_value, "value")
    b = _number(reference_value, "reference") * (1.0 - rtol) if bound is None else float(bound)
    assert v >= b, f"got {v!r}, expected >= {b!r}"


def le(
    student_value: Any, reference_value: Any = None, *, bound: float | None = None, rtol: float = 0.0
) -> None:
    """``student_value <= bound`` (default bound: the reference's value times ``1 + rtol``)."""
    v = _number(student_value, "value")
    b = _number(reference_value, "reference") * (1.0 + rtol) if bound is None else float(bound)
    assert v <= b, f"got {v!r}, expected <= {b!r}"


def card(student_value: Any, reference_value: Any = None, *, rtol: float = 0.25) -> None:
    """A solution card recorded as ``{"card": {lab, latency, cost, capacity, fallback, justification},
    "measured": {name: number}}`` (limits as ``{"value", "unit", "note"}`` dicts or None) passes
    ``course_dist.card.check_card`` against the student's own measurements."""
    from course_dist.card import LIMITS, Limit, SolutionCard, check_card

    assert isinstance(student_value, dict), (
        f"expected {{'card': ..., 'measured': ...}}, got {student_value!r}"
    )
    c, measured = student_value.get("card"), student_value.get("measured") or {}
    assert isinstance(c, dict), f"card: expected a dict of the card's fields, got {type(c).__name__} {c!r}"
    assert isinstance(measured, dict), f"measured: expected a dict, got {measured!r}"
    limits = {}
    for name in LIMITS:
        lim = c.get(name)
        if lim is None:
            limits[name] = None
        elif isinstance(lim, dict):
            limits[name] = Limit(lim.get("value"), lim.get("unit", ""), lim.get("note", ""))
        else:
            raise AssertionError(f"{name}: expected a Limit recorded as a dict, got {lim!r}")
    sc = SolutionCard(str(c.get("lab", "")), justification=str(c.get("justification") or ""), **limits)
    try:
        check_card(sc, {k: v for k, v in measured.items()}, rtol=rtol)
    except (ValueError, TypeError) as exc:
        raise AssertionError(str(exc)) from None
