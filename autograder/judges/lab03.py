"""Trusted judge rules of lab 03 (DESIGN.md, grading contract): comparisons the reference's value cannot
make by equality, because the right answer is a property of a message the student words freely.

- ``averaged_verdict``: ``check_averaged``'s outcome on gradients scaled by a known factor. The student's
  message is recorded raw (None when the check passed); it must pass where the reference passed, fail where
  the reference failed, say "summed" exactly where the reference said it, and name the ratio (``named``, a
  param of the reference, never the student's).

Each rule gets ``(student_value, reference_value, **params)`` and raises AssertionError naming the values.
Rules see only data (the evidence); they import nothing from the student's code.
"""

from __future__ import annotations

from typing import Any


def _verdict(msg: Any) -> str:
    if msg is None:
        return "passes"
    if not isinstance(msg, str):
        raise AssertionError(f"expected None (passed) or the AssertionError's message, got {msg!r}")
    return "summed" if "summed" in msg else "fails"


def averaged_verdict(student_value: Any, reference_value: Any = None, *, factor: float,
                     named: str | None = None) -> None:
    """``student_value``: None (check_averaged passed) or its AssertionError message (str); ``named``: the
    ratio as the message must name it (the visible factors; a drawn one is named to any precision)."""
    got, want = _verdict(student_value), _verdict(reference_value)
    assert got == want, (
        f"check_averaged on gradients x{factor:g}: {got} ({str(student_value)[:200]!r}), expected {want}"
    )
    if want != "passes" and named is not None:
        assert named in student_value, (
            f"check_averaged on gradients x{factor:g}: the message must name the ratio {named}, got "
            f"{student_value[:200]!r}"
        )
