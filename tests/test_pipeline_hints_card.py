"""course_dist.hint (staged hints) and course_dist.card (solution cards)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from course_dist import hints as H
from course_dist.card import Limit, SolutionCard, check_card

HINTS = "demo.ex:\n  - 'nudge text'\n  - 'approach text'\n  - 'near solution text'\n"


@pytest.fixture
def in_lab_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "hints.yaml").write_text(HINTS)
    monkeypatch.chdir(tmp_path)
    H.reset_hints()
    yield tmp_path
    H.reset_hints()


def test_hints_never_advance_by_themselves(in_lab_dir: Path, capsys: pytest.CaptureFixture) -> None:
    """Running a hint cell again (or a notebook top to bottom) shows the same stage: asking is deliberate."""
    assert [H.get_hint("demo.ex")[1] for _ in range(3)] == ["nudge text"] * 3
    assert [H.get_hint("demo.ex", s)[1] for s in (1, 2, 3)] == [
        "nudge text",
        "approach text",
        "near solution text",
    ]
    H.hint("demo.ex")
    out = capsys.readouterr().out
    assert "Hint 1/3 (nudge) for demo.ex" in out and "nudge text" in out and "hint('demo.ex', 2)" in out
    H.hint("demo.ex", 3)
    assert "near solution text" in capsys.readouterr().out


def test_hint_errors_name_what_is_known(in_lab_dir: Path) -> None:
    with pytest.raises(KeyError, match=r"unknown hint id 'demo.nope'; known ids: \['demo.ex'\]"):
        H.hint("demo.nope")
    with pytest.raises(ValueError, match="stage must be an integer 1..3, got 4"):
        H.hint("demo.ex", stage=4)
    with pytest.raises(ValueError, match="got 'nodot'"):
        H.hint("nodot")


def test_hints_file_validation(tmp_path: Path) -> None:
    p = tmp_path / "hints.yaml"
    p.write_text("a.b:\n  - one\n  - two\n")
    with pytest.raises(ValueError, match="a.b must have exactly 3 stages"):
        H.load_hints(p)


def test_hint_falls_back_to_repo_solutions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    labs = [p.parent.name for p in (H._REPO / "solutions").glob("*/hints.yaml")]
    if not labs:
        pytest.skip("no lab hints in solutions/ yet")
    monkeypatch.chdir(tmp_path)
    hints = H.load_hints(H._REPO / "solutions" / labs[0] / "hints.yaml")
    hid = sorted(hints)[0]
    assert H.get_hint(hid, stage=1) == (1, hints[hid][0])


def _card(**changes: object) -> SolutionCard:
    base = dict(
        lab="lab02",
        latency=Limit(0.2, "s/step", "world 2, gloo"),
        cost=Limit(2, "CPU cores", "one per rank"),
        capacity=Limit(64, "samples/step/rank", "memory bound"),
        fallback=Limit(1, "rank", "single process if the group cannot form"),
        justification=" ".join(["word"] * 30),
    )
    base.update(changes)
    return SolutionCard(**base)


def test_complete_consistent_card_passes_and_renders() -> None:
    card = _card()
    check_card(card, {"latency": 0.18, "capacity": 60})
    df = card.to_frame()
    assert (
        list(df.index) == ["latency", "cost", "capacity", "fallback"]
        and df.loc["cost", "unit"] == "CPU cores"
    )
    assert "<table" in card._repr_html_() and "s/step" in str(card)


@pytest.mark.parametrize(
    ("changes", "measured", "match"),
    [
        ({"cost": None}, {}, "cost: missing"),
        ({"latency": Limit(math.nan, "s", "")}, {}, "latency: value must be a finite number, got nan"),
        ({"capacity": Limit(3, " ", "")}, {}, "capacity: unit is empty"),
        ({"justification": "YOUR ANSWER HERE"}, {}, "justification: 3 words"),
        (
            {},
            {"latency": 0.5},
            r"latency: card says 0.2 s/step, the lab measured 0.5 \(off by 60%, tolerance 25%\)",
        ),
    ],
)
def test_card_errors_name_field_and_numbers(changes: dict, measured: dict, match: str) -> None:
    with pytest.raises(AssertionError, match=match):
        check_card(_card(**changes), measured)


def test_card_bad_arguments() -> None:
    with pytest.raises(ValueError, match=r"unknown limit names \['speed'\]"):
        check_card(_card(), {"speed": 1.0})
    with pytest.raises(ValueError, match="rtol must be a finite number >= 0, got -1"):
        check_card(_card(), {}, rtol=-1)
