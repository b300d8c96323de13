"""The trust table in DESIGN.md (issue 32) is generated from the sources and must not go stale."""

from __future__ import annotations

from pathlib import Path

from autograder.config import CourseConfig
from autograder.trust import BEGIN, END, rows, table

ROOT = Path(__file__).resolve().parents[1]


def test_design_holds_the_current_trust_table() -> None:
    cfg = CourseConfig(root=ROOT)
    text = (ROOT / "DESIGN.md").read_text(encoding="utf-8")
    inside = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert inside == table(cfg).strip(), (
        "DESIGN.md's trust table is stale: run `python -m autograder.trust --write` and commit it")


def test_every_hidden_check_is_classed() -> None:
    rs = rows(CourseConfig(root=ROOT))
    assert len(rs) > 100, f"only {len(rs)} hidden checks found: the parser missed the recorder calls"
    bad = [r for r in rs if r["basis"] not in ("trusted", "advisory", "scan-dependent")]
    assert not bad, bad[:3]
