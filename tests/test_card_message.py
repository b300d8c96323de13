"""``check_card``'s AssertionError carries its cause on the first line: a grade reason (grades.csv) keeps an
error's first line only, and "solution card incomplete or inconsistent:" alone says nothing.

Run: .venv/bin/python -m pytest tests/test_card_message.py -x
"""

from __future__ import annotations

import pytest

from autograder.judges import common
from course_dist.card import Limit, SolutionCard, check_card

JUSTIFICATION = " ".join(["word"] * 30)


def _card(**changes: object) -> SolutionCard:
    base = dict(
        lab="lab02",
        latency=Limit(0.2, "s/step", "world 2, gloo"),
        cost=Limit(2, "CPU cores", "one per rank"),
        capacity=Limit(64, "samples/step/rank", "memory bound"),
        fallback=Limit(1, "rank", "single process if the group cannot form"),
        justification=JUSTIFICATION,
    )
    base.update(changes)
    return SolutionCard(**base)


CASES = [
    ({"cost": None}, {}, ["cost: missing"]),
    ({}, {"latency": 0.5}, ["latency: card says 0.2 s/step, the lab measured 0.5"]),
    ({"cost": None, "justification": "too short"}, {"latency": 0.5},
     ["cost: missing", "justification: 2 words", "latency: card says 0.2 s/step, the lab measured 0.5"]),
]


@pytest.mark.parametrize(("changes", "measured", "causes"), CASES)
def test_every_cause_is_on_the_first_line(changes: dict, measured: dict, causes: list[str]) -> None:
    with pytest.raises(AssertionError) as info:
        check_card(_card(**changes), measured)
    first = str(info.value).splitlines()[0]
    missing = [c for c in causes if c not in first]
    assert not missing, f"first line {first!r} lacks {missing} (want all of {causes})"


def test_the_judges_card_rule_keeps_the_cause_on_its_first_line() -> None:
    card = _card().to_dict()
    with pytest.raises(AssertionError) as info:
        common.card({"card": card, "measured": {"latency": 0.5}})
    first = str(info.value).splitlines()[0]
    want = "latency: card says 0.2 s/step, the lab measured 0.5"
    assert want in first, f"first line {first!r}, want it to contain {want!r}"
