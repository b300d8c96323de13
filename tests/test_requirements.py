"""Requirements as data (issue 27 item 1) and raw evidence (issue 22 item 1).

- Every auto-graded exercise lists its requirements in the rubric (``requirements:``, DESIGN.md), each pinned
  by a visible assert of one of the exercise's test cells and each named mutant belonging to that exercise: a
  student who passes the visible tests has been told every rule the hidden tests check.
- Hidden tests record raw values, never the result of a comparison made in the student's process (a patched
  comparator there could say "equal"): the comparison belongs in a judge rule.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from autograder.mutants import read_mutant
from autograder.rubrics import load_rubric
from autograder.source import BEGIN_HIDDEN, END_HIDDEN, grade_id, read_source

ROOT = Path(__file__).resolve().parents[1]
LABS = ("lab01", "lab02", "lab03", "lab04", "lab05", "homework")
RECORDERS = ("equal", "close", "rule")
# calls that compare inside the student's process: the recorded value would then be a verdict
COMPARING_CALLS = ("allclose", "isclose", "equal")


def _source(lab: str) -> Path:
    return ROOT / "solutions" / lab / f"{lab}.py"


def _test_cells(lab: str) -> dict[str, str]:
    cells = read_source(_source(lab)).cells
    return {gid: c.source for c in cells if (gid := grade_id(c)) and c.cell_type == "code"}


def _pinning_lines(cell: str) -> list[str]:
    """The visible part's lines that belong to an assert, a ``raise`` or a call to a ``check*`` function
    (``check_card``): the statements that fail a student's run when a rule is broken."""
    visible = cell.split(BEGIN_HIDDEN)[0]
    lines = cell.splitlines()
    n_visible = len(visible.splitlines())
    spans: set[int] = set()
    for node in ast.walk(ast.parse(cell)):
        pins = isinstance(node, (ast.Assert, ast.Raise))
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            pins = name.startswith("check")
        if pins:
            spans.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return [lines[i - 1] for i in sorted(spans) if i <= n_visible]


@pytest.mark.parametrize("lab", LABS)
def test_every_auto_exercise_lists_pinned_requirements(lab: str) -> None:
    rubric = load_rubric(ROOT / "autograder" / "rubric" / f"{lab}.yaml")
    cells = _test_cells(lab)
    folder = ROOT / "autograder" / "mutants" / lab
    mutants = {p.stem: read_mutant(p)[0] for p in sorted(folder.glob("*.py"))}
    problems = []
    for ex in rubric.exercises:
        if not ex.auto_ids:
            continue
        if not ex.requirements:
            problems.append(f"{lab}/{ex.id}: auto-graded but the rubric lists no requirements")
            continue
        pinning = {gid: _pinning_lines(cells[gid]) for gid in sorted(ex.auto_ids) if gid in cells}
        for i, req in enumerate(ex.requirements):
            where = f"{lab}/{ex.id} requirement {i} ({req.text[:60]!r})"
            if not any(req.visible in line for lines in pinning.values() for line in lines):
                problems.append(
                    f"{where}: visible {req.visible!r} is on no assert line of the visible part of "
                    f"{sorted(pinning)}"
                )
            for m in req.mutants:
                if m not in mutants:
                    problems.append(f"{where}: mutant {m!r} does not exist in autograder/mutants/{lab}/")
                elif mutants[m]["exercise"] != ex.id:
                    problems.append(
                        f"{where}: mutant {m!r} belongs to exercise {mutants[m]['exercise']!r}, not {ex.id!r}"
                    )
    assert not problems, "\n".join(problems)


def _visible_lines(cell: str) -> list[str]:
    return cell.split(BEGIN_HIDDEN)[0].splitlines()


@pytest.mark.parametrize("lab", LABS)
def test_every_requirement_lists_separated_alternatives(lab: str) -> None:
    """Issue 34: each requirement names the plausible wrong rules a strong student might apply instead (as
    data) and, for each, the visible input on which it answers differently from the reference: a substring of
    a line in the visible part of one of the exercise's test cells. A named mutant applies that rule."""
    rubric = load_rubric(ROOT / "autograder" / "rubric" / f"{lab}.yaml")
    cells = _test_cells(lab)
    folder = ROOT / "autograder" / "mutants" / lab
    mutants = {p.stem: read_mutant(p)[0] for p in sorted(folder.glob("*.py"))}
    problems = []
    for ex in rubric.exercises:
        if not ex.auto_ids or not ex.requirements:
            continue
        visible = [line for gid in sorted(ex.auto_ids) if gid in cells for line in _visible_lines(cells[gid])]
        for i, req in enumerate(ex.requirements):
            where = f"{lab}/{ex.id} requirement {i} ({req.text[:60]!r})"
            if not req.alternatives:
                problems.append(f"{where}: lists no alternatives (plausible wrong rules and their inputs)")
            for alt in req.alternatives:
                if not any(alt.input in line for line in visible):
                    problems.append(
                        f"{where}: alternative {alt.rule[:50]!r}: input {alt.input!r} is on no line of the "
                        f"visible part of {sorted(ex.auto_ids)}"
                    )
                if alt.mutant and alt.mutant not in mutants:
                    problems.append(f"{where}: alternative's mutant {alt.mutant!r} does not exist")
                elif alt.mutant and mutants[alt.mutant]["exercise"] != ex.id:
                    problems.append(f"{where}: alternative's mutant {alt.mutant!r} is another exercise's")
    assert not problems, f"{len(problems)} problem(s):\n" + "\n".join(problems)


def _comparisons(value: ast.expr) -> list[str]:
    """Comparisons inside a recorded value expression. A comprehension's ``if`` filter only chooses which
    raw values are recorded, and an ``is None`` guard how one is written, so neither is one."""
    comprehensions = [n for n in ast.walk(value) if isinstance(n, ast.comprehension)]
    filters = {id(cond) for node in comprehensions for cond in node.ifs}
    found: list[str] = []

    def visit(node: ast.AST) -> None:
        if id(node) in filters:
            return
        if isinstance(node, ast.Compare):
            # ``x is None`` only guards how a raw value is written down (None or its name), no verdict
            guard = all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops) and all(
                isinstance(c, ast.Constant) and c.value is None for c in node.comparators
            )
            if not guard:
                found.append(ast.unparse(node))
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name in COMPARING_CALLS:
                found.append(ast.unparse(node))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(value)
    return found


def _hidden_spans(cell: str) -> list[tuple[int, int]]:
    spans, start = [], None
    for i, line in enumerate(cell.splitlines(), 1):
        if BEGIN_HIDDEN in line:
            start = i
        elif END_HIDDEN in line and start is not None:
            spans.append((start, i))
            start = None
    return spans


@pytest.mark.parametrize("lab", LABS)
def test_hidden_tests_record_values_not_verdicts(lab: str) -> None:
    problems = []
    for gid, cell in _test_cells(lab).items():
        spans = _hidden_spans(cell)
        if not spans:
            continue
        for node in ast.walk(ast.parse(cell)):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in RECORDERS
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id != "torch"  # torch.equal is a comparison, not a recorder
                and any(a <= node.lineno <= b for a, b in spans)
            ):
                continue
            values = node.args[1:2] + [k.value for k in node.keywords if k.arg == "value"]
            for value in values:
                for cmp in _comparisons(value):
                    problems.append(
                        f"{lab} {gid} line {node.lineno}: {ast.unparse(node)[:140]} records the comparison "
                        f"{cmp[:80]!r}; record the raw values and compare in a judge rule"
                    )
    assert not problems, "\n".join(problems)


def test_requirement_fields_are_validated(tmp_path: Path) -> None:
    base = (
        "lab: labx\ntotal: 100\nexercises:\n  - id: ex1\n    graded_cells:\n"
        "      - {grade_id: ex1_tests, points: 100, kind: auto}\n    requirements:\n"
    )
    good = '      - {text: "rule", visible: "assert x", hidden: "seeded"}\n'
    path = tmp_path / "r.yaml"
    path.write_text(base + good)
    (ex,) = load_rubric(path).exercises
    assert ex.requirements is not None and ex.requirements[0].mutants == (), ex.requirements
    for bad, field in [
        ('      - {text: "rule", hidden: "seeded"}\n', "visible"),
        ('      - {text: "", visible: "a", hidden: "b"}\n', "text"),
        ('      - {text: "r", visible: "a", hidden: "b", mutants: "m1"}\n', "mutants"),
        ('      - {text: "r", visible: "a", hidden: "b", extra: 1}\n', "extra"),
        ('      - {text: "r", visible: "a", hidden: "b", alternatives: [{rule: "x"}]}\n', "input"),
        ('      - {text: "r", visible: "a", hidden: "b", alternatives: [{rule: "x", input: "y", zz: 1}]}\n',
         "zz"),
    ]:
        path.write_text(base + bad)
        with pytest.raises(ValueError) as err:
            load_rubric(path)
        msg = str(err.value)
        assert "labx" in msg and "ex1" in msg and field in msg, (
            f"expected the lab, the exercise and {field!r} in the message, got: {msg}"
        )


def test_comparison_rules_judge_raw_values() -> None:
    import torch

    from autograder.judges import common

    passing = [
        (common.differ, {"a": [1, 2], "b": [2, 1]}, {}),
        (common.same, {"a": [torch.ones(2), 0.5], "b": [torch.ones(2), 0.5]}, {}),
        (common.less_than, 1e-5, {"bound": 1e-4}),
        (common.below, {"a": 110, "b": 100}, {"factor": 1.1, "strict": False}),
        (common.decreasing, [3.0, 2.0, 1.0], {}),
        (common.is_max, {"values": [4, 8, 12], "last": 12}, {}),
        (common.contains, "ValueError: 48 not divisible", {"needles": ["48"]}),
        (common.contains, ["needs 7", "needs 5"], {"needles": ["7", "5"]}),
    ]
    failing = [
        (common.differ, {"a": [1, 2], "b": [1, 2]}, {}),
        (common.same, {"a": [torch.ones(2)], "b": [torch.ones(2, dtype=torch.float64)]}, {}),
        (common.less_than, 1e-4, {"bound": 1e-4}),
        (common.below, {"a": 100, "b": 100}, {}),
        (common.decreasing, [3.0, 3.0, 1.0], {}),
        (common.is_max, {"values": [4, 8, 12], "last": 8}, {}),
        (common.contains, None, {"needles": ["48"]}),
        (common.contains, ["needs 7", None], {"needles": ["7", "5"]}),
    ]
    for rule, value, params in passing:
        rule(value, None, **params)
    for rule, value, params in failing:
        with pytest.raises(AssertionError):
            rule(value, None, **params)
            raise RuntimeError(f"{rule.__name__}({value!r}, {params}) passed, expected AssertionError")
