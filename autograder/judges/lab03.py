"""Trusted judge rules of lab 03 (DESIGN.md, grading contract): comparisons the reference's value cannot
make by equality, because the right answer is a property of a message the student words freely.

- ``averaged_verdict``: ``check_averaged``'s outcome on gradients scaled by a known factor. The student's
  message is recorded raw (None when the check passed); it must pass where the reference passed, fail where
  the reference failed, say "summed" exactly where the reference said it, and name the ratio (``ratio``, a
  param of the reference, never the student's: some number in the message within 5e-4 x max(1, |ratio|) of
  it, so any wording and any precision from 3 decimals on passes; issue 33 item 3).

Each rule gets ``(student_value, reference_value, **params)`` and raises AssertionError naming the values.
Rules see only data (the evidence); they import nothing from the student's code.
"""

from __future__ import annotations

import re
from typing import Any


def _verdict(msg: Any) -> str:
    if msg is None:
        return "passes"
    if not isinstance(msg, str):
        raise AssertionError(f"expected None (passed) or the AssertionError's message, got {msg!r}")
    return "summed" if "summed" in msg else "fails"


_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def names_ratio(msg: str, ratio: float) -> bool:
    """Some number written in ``msg`` is within 5e-4 x max(1, |ratio|) of ``ratio``."""
    return any(abs(float(x) - ratio) <= 5e-4 * max(1.0, abs(ratio)) for x in _NUMBER.findall(msg))


def averaged_verdict(student_value: Any, reference_value: Any = None, *, factor: float,
                     ratio: float | None = None) -> None:
    """``student_value``: None (check_averaged passed) or its AssertionError message (str); ``ratio``: the
    ratio sum(g*r)/sum(r*r) the failing message must name (computed by the reference's test cell)."""
    got, want = _verdict(student_value), _verdict(reference_value)
    assert got == want, (
        f"check_averaged on gradients x{factor:g}: {got} ({str(student_value)[:200]!r}), expected {want}"
    )
    if want != "passes" and ratio is not None:
        assert names_ratio(student_value, ratio), (
            f"check_averaged on gradients x{factor:g}: the message must name the ratio {ratio:.6f} (3 "
            f"decimals or more), got {student_value[:200]!r}"
        )
