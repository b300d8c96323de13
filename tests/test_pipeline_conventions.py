"""Release conventions of DESIGN.md, checked on every lab's source and fresh release (issue 10).

- every written question is visible: its prompt is a markdown cell right above the answer cell;
- showing a hint is deliberate: no ``hint(...)`` call in any code cell;
- every auto-graded test cell records evidence for the trusted judge (grading contract);
- a lab's core path fits 90 minutes: <= 5 core exercises, ~100 lines of student code, stretch <= 15
  points, and every exercise heading states its points and time.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
import yaml
from _pipeline import CFG, LABS

from autograder.source import BEGIN_HIDDEN, nbgrader_meta, read_source

pytestmark = pytest.mark.skipif(not LABS, reason="no lab sources under solutions/ yet")
LAB_ONLY = [lab for lab in LABS if lab != "homework"]  # the homework is a package: its budget is its own
WRITTEN = re.compile(r"^\*\*Written \((\d+(?:\.\d+)?) points?\)\.\*\*")
POINTS = r"\d+(?:\.\d+)?(?: *\+ *\d+(?:\.\d+)?)*"  # "12 points" or "12 + 8 points"
HEADING = re.compile(rf"^#{{2,3}} (Exercise|Stretch) \S+ *[—-] .*\(({POINTS}) points?, ~\d+ min")
HINT_CALL = re.compile(r"(^|[^\w.])hint\(")
MAX_CORE_EXERCISES, MAX_STRETCH_POINTS, MAX_STUDENT_LINES = 5, 15, 130


@pytest.fixture(scope="module")
def fresh(fresh_release: Path) -> Path:
    """The session's fresh release (tests/conftest.py): one nbgrader generate_assignment per lab per run."""
    return fresh_release


@pytest.mark.parametrize("lab", LABS)
def test_every_written_question_is_visible_in_the_release(fresh: Path, lab: str) -> None:
    cells = nbformat.read(fresh / lab / f"{lab}.ipynb", as_version=4).cells
    hidden = []
    for i, cell in enumerate(cells):
        meta = nbgrader_meta(cell)
        if not (meta.get("grade") and meta.get("solution") and cell.cell_type == "markdown"):
            continue
        prev = cells[i - 1] if i else None
        prompt = prev.source.strip() if prev is not None and prev.cell_type == "markdown" else ""
        m = WRITTEN.match(prompt)
        if prev is None or nbgrader_meta(prev).get("solution") or not m:
            hidden.append(
                f"{meta['grade_id']}: the cell above must be the question, starting "
                f"'**Written ({meta.get('points')} points).**' (found {prompt[:60]!r})"
            )
        elif float(m.group(1)) != float(meta.get("points", 0)):
            hidden.append(
                f"{meta['grade_id']}: question says {m.group(1)} points, the cell is worth "
                f"{meta.get('points')}"
            )
    assert not hidden, f"{lab}: written questions a student cannot read:\n  " + "\n  ".join(hidden)


@pytest.mark.parametrize("lab", LABS)
def test_no_hint_is_shown_without_being_asked(lab: str) -> None:
    src = read_source(CFG.solutions / lab / f"{lab}.py")
    calls = [
        f"cell {i}: {line.strip()}"
        for i, cell in enumerate(src.cells)
        if cell.cell_type == "code"
        for line in cell.source.splitlines()
        if HINT_CALL.search(line.split("#", 1)[0])
    ]
    assert not calls, (
        f"{lab}: hint() calls in code cells reveal hints unasked (put them in markdown):\n  "
        + "\n  ".join(calls)
    )


@pytest.mark.parametrize("lab", LABS)
def test_every_auto_test_cell_records_evidence(lab: str) -> None:
    src = read_source(CFG.solutions / lab / f"{lab}.py")
    missing = []
    for cell in src.cells:
        meta = nbgrader_meta(cell)
        if cell.cell_type != "code" or not meta.get("grade") or meta.get("solution"):
            continue
        hidden = cell.source.split(BEGIN_HIDDEN, 1)[1] if BEGIN_HIDDEN in cell.source else ""
        gid = meta["grade_id"]
        # Evidence("<grade_id>") directly, or a labkit helper given the grade_id that records it
        if "vidence" not in hidden or (f'"{gid}"' not in hidden and f"'{gid}'" not in hidden):
            missing.append(gid)
    assert not missing, (
        f"{lab}: auto-graded cells whose hidden part records no evidence for the judge "
        f'(Evidence("<grade_id>") inside BEGIN HIDDEN TESTS): {missing}'
    )


def _student_lines(src: nbformat.NotebookNode, cells: set[str]) -> int:
    n = 0
    for cell in src.cells:
        if cell.cell_type != "code" or nbgrader_meta(cell).get("grade_id") not in cells:
            continue
        inside = False
        for line in cell.source.splitlines():
            s = line.strip()
            if s == "### BEGIN SOLUTION":
                inside = True
            elif s == "### END SOLUTION":
                inside = False
            elif inside and s and not s.startswith("#"):
                n += 1
    return n


@pytest.mark.parametrize("lab", LAB_ONLY)
def test_core_path_fits_ninety_minutes(lab: str) -> None:
    rubric = yaml.safe_load((CFG.rubric / f"{lab}.yaml").read_text())
    core = [e for e in rubric["exercises"] if not e.get("stretch")]
    stretch = [e for e in rubric["exercises"] if e.get("stretch")]
    stretch_points = sum(c["points"] for e in stretch for c in e["graded_cells"])
    assert len(core) <= MAX_CORE_EXERCISES, f"{lab}: {len(core)} core exercises {[e['id'] for e in core]}"
    assert stretch_points <= MAX_STRETCH_POINTS, f"{lab}: stretch exercises worth {stretch_points} points"
    src = read_source(CFG.solutions / lab / f"{lab}.py")
    lines = _student_lines(src, {c for e in core for c in e.get("solution_cells", [])})
    assert lines <= MAX_STUDENT_LINES, f"{lab}: {lines} lines of student code on the core path (~100 wanted)"


@pytest.mark.parametrize("lab", LAB_ONLY)
def test_exercise_headings_state_points_and_time(lab: str) -> None:
    src = read_source(CFG.solutions / lab / f"{lab}.py")
    heads = [
        line.strip()
        for cell in src.cells
        if cell.cell_type == "markdown"
        for line in cell.source.splitlines()
        if re.match(r"^#{2,3} (Exercise|Stretch)\b", line.strip())
    ]
    assert heads, f"{lab}: no '## Exercise N — Title (P points, ~M min)' headings"
    bad = [h for h in heads if not HEADING.match(h)]
    assert not bad, f"{lab}: headings without '(P points, ~M min)': {bad}"
    # the points a heading states are the rubric's (one fact, stated once in the rubric and checked here):
    # an exercise's heading is the last one before its first graded cell
    rubric = yaml.safe_load((CFG.rubric / f"{lab}.yaml").read_text())
    at: list[tuple[int, str]] = []
    pos: dict[str, int] = {}
    for i, cell in enumerate(src.cells):
        gid = (cell.metadata.get("nbgrader") or {}).get("grade_id")
        if gid:
            pos[gid] = i
        if cell.cell_type == "markdown":
            at += [(i, ln.strip()) for ln in cell.source.splitlines() if HEADING.match(ln.strip())]
    wrong = []
    for ex in rubric["exercises"]:
        first = min(pos[c["grade_id"]] for c in ex["graded_cells"])
        head = [h for i, h in at if i < first][-1]
        stated = sum(float(x) for x in HEADING.match(head).group(2).split("+"))
        points = sum(float(c["points"]) for c in ex["graded_cells"])
        if stated != points:
            wrong.append(f"{ex['id']}: heading says {stated:g} points, the rubric {points:g} ({head!r})")
    assert not wrong, f"{lab}: " + "; ".join(wrong)
