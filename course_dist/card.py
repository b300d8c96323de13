"""The solution card that ends every lab: the student's resolution, with latency, cost, capacity and
fallback limits.

Usage in a notebook (the justification is graded by hand; the numbers are checked here)::

    from course_dist.card import Limit, SolutionCard, check_card
    card = SolutionCard(
        lab="lab02",
        latency=Limit(0.18, "s/step", "world 2, gloo, 9.4 M params"),
        cost=Limit(2.0, "CPU cores", "one per rank"),
        capacity=Limit(64, "samples/step/rank", "activation memory bound"),
        fallback=Limit(1, "ranks", "single process when the group cannot form"),
        justification="...",
    )
    check_card(card, measured={"latency": 0.17})
    card            # renders as a table
"""

from __future__ import annotations

import math
from dataclasses import dataclass

LIMITS = ("latency", "cost", "capacity", "fallback")
MIN_JUSTIFICATION_WORDS = 25
PLACEHOLDER = "YOUR ANSWER HERE"  # the release stub of a written answer


@dataclass(frozen=True)
class Limit:
    """One stated limit: a number, its unit, and a short note on the conditions it was measured under."""

    value: float
    unit: str
    note: str = ""


@dataclass(frozen=True)
class SolutionCard:
    """A lab's resolution: four limits with numbers and units plus a written justification (graded by the
    rubric).

    Attributes:
        lab: lab id, e.g. "lab02".
        latency: how long the critical operation takes (e.g. seconds per step).
        cost: what it costs (e.g. cores, GPUs, bytes moved per step, dollars per hour).
        capacity: the largest load it handles (e.g. parameters, samples per step, ranks).
        fallback: what happens or what is used when it fails or the limit is exceeded, with its own number.
        justification: why these limits hold and what you would pick instead beyond them.
    """

    lab: str
    latency: Limit | None
    cost: Limit | None
    capacity: Limit | None
    fallback: Limit | None
    justification: str = ""

    def to_dict(self) -> dict:
        """Plain data (what ``course_dist.evidence`` records for the judge): limits as dicts, None kept."""
        from dataclasses import asdict

        return asdict(self)

    def to_frame(self):  # noqa: ANN201 - pandas imported lazily
        """The four limits as a pandas DataFrame (one row per limit)."""
        import pandas as pd

        rows = []
        for name in LIMITS:
            lim = getattr(self, name)
            rows.append(
                {
                    "limit": name,
                    "value": None if lim is None else lim.value,
                    "unit": None if lim is None else lim.unit,
                    "note": None if lim is None else lim.note,
                }
            )
        return pd.DataFrame(rows).set_index("limit")

    def _repr_html_(self) -> str:
        import html

        return (
            f"<b>Solution card: {html.escape(self.lab)}</b>"
            + self.to_frame().to_html()
            + f"<p><i>Justification:</i> {html.escape(self.justification)}</p>"
        )

    def __str__(self) -> str:
        return f"Solution card {self.lab}\n{self.to_frame().to_string()}\nJustification: {self.justification}"


def _is_number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(float(x))


def check_card(card: SolutionCard, measured: dict[str, float], rtol: float = 0.25) -> None:
    """Assert the card is complete and agrees with what the lab measured.

    Checks: all four limits are ``Limit``s with finite numbers and non-empty units; the justification is at
    least
    ``MIN_JUSTIFICATION_WORDS`` words and not a placeholder; for every ``measured[name]`` the card's value
    is within
    ``rtol`` (relative) of it. Raises AssertionError naming the field and the numbers, every problem on its
    first line (the line a grade reason keeps); ValueError for bad arguments.
    """
    if not isinstance(card, SolutionCard):
        raise TypeError(f"check_card expects a SolutionCard, got {type(card).__name__}")
    if not _is_number(rtol) or rtol < 0:
        raise ValueError(f"rtol must be a finite number >= 0, got {rtol!r}")
    unknown = set(measured) - set(LIMITS)
    if unknown:
        raise ValueError(f"measured has unknown limit names {sorted(unknown)}; use {list(LIMITS)}")
    problems = []
    for name in LIMITS:
        lim = getattr(card, name)
        if lim is None:
            problems.append(f"{name}: missing (give Limit(value, unit, note))")
            continue
        if not isinstance(lim, Limit):
            problems.append(f"{name}: expected a Limit, got {type(lim).__name__} {lim!r}")
            continue
        if not _is_number(lim.value):
            problems.append(f"{name}: value must be a finite number, got {lim.value!r}")
        if not isinstance(lim.unit, str) or not lim.unit.strip():
            problems.append(f"{name}: unit is empty (value {lim.value!r} of what?)")
    text = card.justification if isinstance(card.justification, str) else ""
    words = len(text.split())
    if words < MIN_JUSTIFICATION_WORDS or PLACEHOLDER in text:
        problems.append(
            f"justification: {words} words; write at least {MIN_JUSTIFICATION_WORDS} explaining why the "
            "limits hold and what you would use beyond them"
        )
    for name, value in measured.items():
        lim = getattr(card, name)
        if not isinstance(lim, Limit) or not _is_number(lim.value):
            continue
        if not _is_number(value):
            raise ValueError(f"measured[{name!r}] must be a finite number, got {value!r}")
        if abs(float(lim.value) - float(value)) > rtol * abs(float(value)):
            rel = abs(float(lim.value) - float(value)) / abs(float(value)) if value else math.inf
            problems.append(
                f"{name}: card says {lim.value} {lim.unit}, the lab measured {value} "
                f"(off by {rel:.0%}, tolerance {rtol:.0%})"
            )
    # Every problem on the first line: a grade reason keeps only an error's first line.
    assert not problems, "solution card incomplete or inconsistent: " + "; ".join(problems)


__all__ = ["LIMITS", "Limit", "SolutionCard", "check_card"]
