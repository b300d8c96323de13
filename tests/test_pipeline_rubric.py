"""Rubric <-> notebook metadata (both ways), staged hints, mutant headers: for every lab under solutions/."""

from __future__ import annotations

import pytest
from _pipeline import CFG, LABS

from autograder.mutants import find_mutants
from autograder.rubrics import load_rubric, rubric_problems
from autograder.source import graded_cells, normalize_line, read_source, solution_cells, solution_lines
from course_dist.hints import STAGES, load_hints

pytestmark = pytest.mark.skipif(not LABS, reason="no lab sources under solutions/ yet")


def _rubric(lab: str):  # noqa: ANN202
    path = CFG.rubric / f"{lab}.yaml"
    assert path.exists(), f"{lab}: no rubric at {path}"
    return load_rubric(path)


@pytest.mark.parametrize("lab", LABS)
def test_rubric_totals_100_and_matches_notebook(lab: str) -> None:
    rubric = _rubric(lab)
    assert rubric.lab == lab, f"{CFG.rubric / f'{lab}.yaml'} says lab {rubric.lab!r}"
    nb = read_source(CFG.solutions / lab / f"{lab}.py")
    problems = rubric_problems(rubric, graded_cells(nb), set(solution_cells(nb)))
    assert not problems, f"{lab}: rubric and notebook disagree:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("lab", LABS)
def test_every_exercise_has_three_hints_and_every_hint_an_exercise(lab: str) -> None:
    path = CFG.solutions / lab / "hints.yaml"
    assert path.exists(), f"{lab}: no {path}"
    hints = load_hints(path)  # validates: exactly three non-empty stages
    want = {f"{lab}.{ex.id}" for ex in _rubric(lab).exercises}
    assert not want - hints.keys(), f"{lab}: exercises without hints: {sorted(want - hints.keys())}"
    assert not hints.keys() - want, f"{lab}: hints for no exercise: {sorted(hints.keys() - want)}"
    assert all(len(v) == len(STAGES) for v in hints.values())


@pytest.mark.parametrize("lab", LABS)
def test_early_hint_stages_do_not_give_the_solution_away(lab: str) -> None:
    secret = solution_lines(read_source(CFG.solutions / lab / f"{lab}.py"))
    path = CFG.solutions / lab / "hints.yaml"
    if not path.exists():
        pytest.skip(f"{lab}: no hints.yaml (reported by the hints test)")
    leaks = []
    for hid, stages in load_hints(path).items():
        for n, text in enumerate(stages[:2], start=1):
            flat = " ".join(normalize_line(ln) or ln.strip() for ln in text.splitlines())
            leaks += [f"{hid} stage {n}: {line!r}" for line in secret if line in flat]
    assert not leaks, f"{lab}: stages 1-2 quote the reference solution:\n  " + "\n  ".join(leaks)


@pytest.mark.parametrize("lab", LABS)
def test_mutant_headers_name_a_real_exercise_and_answer_cell(lab: str) -> None:
    mutants = find_mutants(CFG, lab)
    if not mutants:
        pytest.fail(f"{lab}: no mutants under {CFG.mutants / lab} (one plausible wrong answer per exercise)")
    rubric = _rubric(lab)
    answers = set(solution_cells(read_source(CFG.solutions / lab / f"{lab}.py")))
    problems = []
    for m in mutants:
        try:
            ex = rubric.exercise(m.exercise)
        except KeyError as exc:
            problems.append(f"{m.path.name}: {exc}")
            continue
        if m.is_file_mutant:
            if not (CFG.solutions / lab / m.replaces).is_file():
                problems.append(
                    f"{m.path.name}: replaces {m.replaces!r}, not a file beside solutions/{lab}/{lab}.py"
                )
            continue
        if m.replaces not in ex.solution_cells or m.replaces not in answers:
            problems.append(
                f"{m.path.name}: replaces {m.replaces!r}, not an answer cell of {ex.id} "
                f"({list(ex.solution_cells)})"
            )
    assert not problems, "\n".join(problems)
    covered = {m.exercise for m in mutants}
    # every auto-graded exercise has a plausible wrong answer; a package lab's (the homework's) items are
    # answered in files, not cells, so there it is every item with auto points
    package = any(m.is_file_mutant for m in mutants)
    code_exercises = {ex.id for ex in rubric.exercises if ex.auto_ids and (package or ex.solution_cells)}
    assert code_exercises <= covered, f"{lab}: exercises without a mutant: {sorted(code_exercises - covered)}"
