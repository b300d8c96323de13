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


def test_no_test_cell_rests_on_advisory_checks_alone() -> None:
    """Issue 32: a number the student process measures about itself never earns a cell's points alone; every
    test cell with an advisory check also holds a trusted one."""
    from collections import defaultdict

    basis: dict[tuple[str, str], set[str]] = defaultdict(set)
    for r in rows(CourseConfig(root=ROOT)):
        basis[(r["lab"], r["cell"])].add(r["basis"])
    alone = sorted(k for k, b in basis.items() if "advisory" in b and "trusted" not in b)
    assert not alone, f"test cells whose hidden checks are all advisory: {alone}"
