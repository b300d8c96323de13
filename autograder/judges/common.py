"""Rules shared by every lab: ``card``, ``true``, ``between``, ``ge``, ``le``, and the comparisons moved
out of the student's process (``differ``, ``same``, ``less_than``, ``below``, ``decreasing``, ``is_max``,
``contains``; see ``autograder.judges``).

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


# Comparisons moved out of the student's process (issue 22 item 1): a hidden test records the raw values
# and one of these rules compares them here, so no patched comparator in the kernel can say "equal".


def _same(a: Any, b: Any) -> bool:
    """Structural equality of evidence values; tensors bitwise (shape and dtype included)."""
    import torch

    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (
            isinstance(a, torch.Tensor)
            and isinstance(b, torch.Tensor)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and bool(torch.equal(a, b))
        )
    if isinstance(a, dict) and isinstance(b, dict):
        return set(a) == set(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _pair(student_value: Any) -> tuple[Any, Any]:
    assert isinstance(student_value, dict) and {"a", "b"} <= set(student_value), (
        f"expected {{'a': ..., 'b': ...}}, got {type(student_value).__name__} {str(student_value)[:120]}"
    )
    return student_value["a"], student_value["b"]


def differ(student_value: Any, reference_value: Any = None) -> None:
    """``{"a": x, "b": y}``: x and y are not equal (e.g. two epochs' orders)."""
    a, b = _pair(student_value)
    assert not _same(a, b), f"expected two different values, got the same twice: {str(a)[:200]}"


def same(student_value: Any, reference_value: Any = None) -> None:
    """``{"a": x, "b": y}``: x and y are equal (tensors bitwise), e.g. an RNG state saved and restored."""
    a, b = _pair(student_value)
    assert _same(a, b), f"expected equal values, got a={str(a)[:200]} and b={str(b)[:200]}"


def less_than(student_value: Any, reference_value: Any = None, *, bound: float) -> None:
    """``student_value < bound`` (strict)."""
    v = _number(student_value, "value")
    assert v < bound, f"got {v!r}, expected < {bound!r}"


def decreasing(student_value: Any, reference_value: Any = None) -> None:
    """A list of numbers, each strictly below the one before."""
    assert isinstance(student_value, (list, tuple)) and len(student_value) >= 2, (
        f"expected a list of at least two numbers, got {student_value!r}"
    )
    vals = [_number(v, f"value {i}") for i, v in enumerate(student_value)]
    ok = all(x > y for x, y in zip(vals, vals[1:], strict=False))
    assert ok, f"expected strictly decreasing, got {vals}"


def is_max(student_value: Any, reference_value: Any = None) -> None:
    """``{"values": [...], "last": x}``: x is the largest of the values (e.g. the newest checkpoint step)."""
    assert isinstance(student_value, dict) and {"values", "last"} <= set(student_value), (
        f"expected {{'values': [...], 'last': x}}, got {str(student_value)[:120]}"
    )
    vals = [_number(v, "value") for v in student_value["values"]]
    last = _number(student_value["last"], "last")
    assert vals and max(vals) == last, f"largest of {vals} is {max(vals, default=None)}, expected {last}"


def contains(student_value: Any, reference_value: Any = None, *, needles: list[str]) -> None:
    """A message (str) that contains every needle, or a list of messages (None = no message) where message
    i contains ``needles[i]``. The needles come from the reference's params, never from the student."""
    if isinstance(student_value, (list, tuple)):
        assert len(student_value) == len(needles), (
            f"expected {len(needles)} messages, got {len(student_value)}: {student_value!r}"
        )
        pairs = list(zip(student_value, needles, strict=True))
    else:
        pairs = [(student_value, n) for n in needles]
    for msg, needle in pairs:
        assert isinstance(msg, str), f"expected a message naming {needle!r}, got {msg!r}"
        assert str(needle) in msg, f"expected the message to name {needle!r}, got {msg[:300]!r}"


def below(
    student_value: Any, reference_value: Any = None, *, factor: float = 1.0, strict: bool = True
) -> None:
    """``{"a": x, "b": y}``: ``x < factor·y`` (``<=`` when not ``strict``), two measurements of one run (e.g.
    a sharded optimizer's peak bytes against DDP's)."""
    a, b = _pair(student_value)
    x, y = _number(a, "a"), _number(b, "b") * factor
    ok = x < y if strict else x <= y
    assert ok, f"got a={x!r}, expected {'<' if strict else '<='} {y!r} ({factor:g} x b={_number(b, 'b')!r})"
