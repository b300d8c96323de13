"""Trusted judge rules of lab 02 (DESIGN.md, grading contract): where a comparison with the reference run is
not meaningful, because the right answer is a property of the student's own run.

- ``ring_traffic``: a ring may chunk differently from the reference (which rank sends the longer chunks), so
  the per-rank byte counts are checked against the ring's law, not copied from the reference;
- ``card``: timings differ between runs, so the card is checked against the numbers the same notebook
  measured (and the deterministic capacity against the reference's).

Each rule gets ``(student_value, reference_value, **params)`` and raises AssertionError naming the values.
Rules see only data (the evidence); they import nothing from the student's code.
"""

from __future__ import annotations

import math
from typing import Any

P2P_OPS = ("send", "recv", "isend", "irecv")
CARD_LIMITS = ("latency", "cost", "capacity", "fallback")
MIN_JUSTIFICATION_WORDS = 15


def _number(x: Any, what: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(float(x)):
        raise AssertionError(f"{what} must be a finite number, got {x!r}")
    return float(x)


def ring_traffic(student: Any, reference: Any, element_size: int = 4) -> None:
    """``{"world": R, "traffic": [{"n", "ops", "sent_bytes": [per rank]}, ...]}``: per length, only
    point-to-point ops, 2(R-1)·n elements sent in all (2(R-1)/R·n per rank on average) and no rank above
    2(R-1)·ceil(n/R); the lengths must be the reference's."""
    if not isinstance(student, dict) or not isinstance(student.get("traffic"), list):
        raise AssertionError(f"expected {{'world', 'traffic'}}, got {str(student)[:120]}")
    world = int(_number(student.get("world"), "world"))
    if world != reference["world"]:
        raise AssertionError(f"world {world}, expected {reference['world']}")
    got_n = [rec.get("n") for rec in student["traffic"]]
    want_n = [rec["n"] for rec in reference["traffic"]]
    if got_n != want_n:
        raise AssertionError(f"world {world}: traffic for lengths {got_n}, expected {want_n}")
    for rec in student["traffic"]:
        n, sent, ops = rec["n"], list(rec.get("sent_bytes") or []), list(rec.get("ops") or [])
        bad = [op for op in ops if op not in P2P_OPS]
        if bad:
            raise AssertionError(f"world {world}, length {n}: used {bad}; a ring uses only {list(P2P_OPS)}")
        if len(sent) != world:
            raise AssertionError(f"world {world}, length {n}: bytes for {len(sent)} ranks, expected {world}")
        total = 2 * (world - 1) * n * element_size
        cap = 2 * (world - 1) * -(-n // world) * element_size
        if sum(sent) != total or max(sent, default=0) > cap:
            raise AssertionError(
                f"world {world}, length {n}: bytes sent per rank {sent} (total {sum(sent)}); a ring sends "
                f"{total / world:.1f} per rank on average (2(R-1)/R·n·{element_size}), {total} in all, "
                f"at most {cap} on one rank")


def card(student: Any, reference: Any, rtol: float = 0.25) -> None:
    """``{"card": {limit: value}, "measured": {limit: value}, "justification_words": int}``: every limit on
    the card within ``rtol`` of what the *same* notebook measured; the measured capacity equal to the
    reference's (it depends on no timing); a justification of at least a few words."""
    if not isinstance(student, dict) or not isinstance(student.get("card"), dict) or \
            not isinstance(student.get("measured"), dict):
        raise AssertionError(f"expected {{'card', 'measured', 'justification_words'}}, "
                             f"got {str(student)[:120]}")
    stated, measured = student["card"], student["measured"]
    for name in CARD_LIMITS:
        if name not in measured:
            raise AssertionError(f"card: no measured {name}")
        value = _number(stated.get(name), f"card {name}")
        want = _number(measured[name], f"measured {name}")
        if abs(value - want) > rtol * abs(want):
            raise AssertionError(f"card {name} = {value:.6g}, but this notebook measured {want:.6g} "
                                 f"(allowed ±{rtol:.0%})")
    ref_capacity = reference["measured"]["capacity"]
    if _number(measured["capacity"], "measured capacity") != ref_capacity:
        raise AssertionError(f"capacity from max_params_per_rank(8 GiB, 'adam') = "
                             f"{measured['capacity']:.6g}, expected {ref_capacity:.6g}")
    words = student.get("justification_words")
    if not isinstance(words, int) or words < MIN_JUSTIFICATION_WORDS:
        raise AssertionError(f"card justification has {words!r} words (want >= {MIN_JUSTIFICATION_WORDS})")


BUG3_ENDINGS = ("hang in backward", "collective mismatch")


def bug3_ending(student: Any, reference: Any) -> None:
    """Bug 3 (a rank-dependent unused parameter under torch DDP) must not finish: it hangs with rank 0 in
    backward when the checker gathers (the reference), or gloo aborts on the size mismatch when the checker's
    collective is an all-reduce that pairs with rank 0's pending bucket all-reduce. Either ending is right."""
    if student not in BUG3_ENDINGS:
        raise AssertionError(f"bug 3 ended as {str(student)[:300]!r}; expected one of {list(BUG3_ENDINGS)} "
                             f"(the reference: {reference!r})")
