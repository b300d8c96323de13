"""Rubrics (``autograder/rubric/<lab>.yaml``, schema in DESIGN.md) and their agreement with a lab's
notebook."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

KINDS = ("auto", "manual")
REQUIREMENT_FIELDS = ("text", "visible", "hidden", "mutants", "alternatives")
ALTERNATIVE_FIELDS = ("rule", "input", "mutant")


@dataclass(frozen=True)
class Alternative:
    """A plausible wrong rule a strong student might apply instead of a requirement (issue 34), and the
    visible input on which it gives a different answer from the reference."""

    rule: str  # the alternative rule, e.g. "pads with zeros instead of repeating the head"
    input: str  # a substring of a line in the visible part of the exercise's test cells: the separating input
    mutant: str = ""  # optional: the mutant (autograder/mutants/<lab>/) that applies this rule


@dataclass(frozen=True)
class Requirement:
    """One rule an exercise's text states, with the visible assert that pins it (issue 27): a student who
    passes the visible tests has been told every requirement the hidden tests check."""

    text: str  # the rule, as the exercise text states it
    visible: str  # a substring of the visible assert line (before BEGIN HIDDEN TESTS) that pins it
    hidden: str  # the hidden variants that repeat it on seeded inputs
    mutants: tuple[str, ...] = ()  # known-wrong answers (autograder/mutants/<lab>/) that break only it
    alternatives: tuple[Alternative, ...] = ()  # plausible wrong rules and the visible input separating each


@dataclass(frozen=True)
class GradedCell:
    grade_id: str
    points: float
    kind: str
    text: str  # what the auto tests check, or the manual criteria


@dataclass(frozen=True)
class Exercise:
    id: str
    title: str
    solution_cells: tuple[str, ...]
    graded_cells: tuple[GradedCell, ...]
    stretch: bool = False  # optional exercise beyond the 90-minute core path (DESIGN.md, release conventions)
    # None: the rubric gives no list (tests/test_requirements.py fails for an auto-graded exercise)
    requirements: tuple[Requirement, ...] | None = None

    @property
    def points(self) -> float:
        return sum(c.points for c in self.graded_cells)

    @property
    def auto_ids(self) -> set[str]:
        return {c.grade_id for c in self.graded_cells if c.kind == "auto"}


@dataclass(frozen=True)
class Rubric:
    lab: str
    title: str
    total: float
    exercises: tuple[Exercise, ...] = field(default_factory=tuple)
    # folder beside the source -> the name a student submits it under (the homework's reference package
    # ``fttrainer/`` is graded as the student's ``homework/``, so no grading path trusts a folder's name)
    submit_as: dict[str, str] = field(default_factory=dict)
    # issue 32: answer cells run in a sandboxed student process, every other cell in a trusted kernel
    process_boundary: bool = False

    def exercise(self, exercise_id: str) -> Exercise:
        for ex in self.exercises:
            if ex.id == exercise_id:
                return ex
        raise KeyError(f"{self.lab}: no exercise {exercise_id!r}; known: {[e.id for e in self.exercises]}")

    def cell_points(self) -> dict[str, tuple[float, str]]:
        return {c.grade_id: (c.points, c.kind) for ex in self.exercises for c in ex.graded_cells}

    def exercise_of_cell(self) -> dict[str, str]:
        out = {}
        for ex in self.exercises:
            for c in ex.graded_cells:
                out[c.grade_id] = ex.id
            for s in ex.solution_cells:
                out[s] = ex.id
        return out


def load_rubric(path: Path) -> Rubric:
    """Parse and validate one rubric file; errors say the file, the field and the value."""
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    where = str(path)
    for key in ("lab", "total", "exercises"):
        if key not in data:
            raise ValueError(f"{where}: missing top-level key {key!r}")
    exercises = []
    for i, ex in enumerate(data["exercises"] or []):
        if not ex.get("id"):
            raise ValueError(f"{where}: exercise #{i} has no id")
        cells = []
        for c in ex.get("graded_cells") or []:
            kind = c.get("kind")
            if kind not in KINDS:
                raise ValueError(
                    f"{where}: {ex['id']}/{c.get('grade_id')}: kind must be one of {KINDS}, got {kind!r}"
                )
            pts = c.get("points")
            if not isinstance(pts, (int, float)) or pts < 0:
                raise ValueError(f"{where}: {ex['id']}/{c.get('grade_id')}: points must be >= 0, got {pts!r}")
            text = c.get("checks") if kind == "auto" else c.get("criteria")
            cells.append(GradedCell(str(c["grade_id"]), float(pts), kind, str(text or "")))
        stretch = ex.get("stretch", False)
        if not isinstance(stretch, bool):
            raise ValueError(f"{where}: {ex['id']}: stretch must be true or false, got {stretch!r}")
        exercises.append(
            Exercise(
                str(ex["id"]),
                str(ex.get("title", "")),
                tuple(ex.get("solution_cells") or ()),
                tuple(cells),
                stretch,
                _requirements(ex, f"{where} ({data['lab']}): exercise {ex['id']}"),
            )
        )
    submit_as = data.get("submit_as") or {}
    if not isinstance(submit_as, dict) or not all(isinstance(v, str) and v for v in submit_as.values()):
        raise ValueError(f"{where}: submit_as maps folder -> submitted name, got {submit_as!r}")
    boundary = data.get("process_boundary", False)
    if not isinstance(boundary, bool):
        raise ValueError(f"{where}: process_boundary must be true or false, got {boundary!r}")
    return Rubric(
        str(data["lab"]), str(data.get("title", "")), float(data["total"]), tuple(exercises), dict(submit_as),
        boundary,
    )


def _requirements(ex: dict, where: str) -> tuple[Requirement, ...] | None:
    """An exercise's optional ``requirements:`` list; errors name the lab, the exercise and the field."""
    if "requirements" not in ex:
        return None
    raw = ex["requirements"]
    if not isinstance(raw, list) or not raw:
        raise ValueError(f"{where}: requirements must be a non-empty list, got {raw!r}")
    out = []
    for i, req in enumerate(raw):
        at = f"{where}: requirements[{i}]"
        if not isinstance(req, dict):
            raise ValueError(f"{at}: expected a mapping with {REQUIREMENT_FIELDS}, got {req!r}")
        unknown = sorted(set(req) - set(REQUIREMENT_FIELDS))
        if unknown:
            raise ValueError(f"{at}: unknown field(s) {unknown}; fields are {REQUIREMENT_FIELDS}")
        for name in ("text", "visible", "hidden"):
            value = req.get(name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{at}.{name}: expected a non-empty string, got {value!r}")
        mutants = req.get("mutants") or []
        if not isinstance(mutants, list) or not all(isinstance(m, str) and m for m in mutants):
            raise ValueError(f"{at}.mutants: expected a list of mutant names, got {mutants!r}")
        out.append(
            Requirement(
                req["text"].strip(),
                req["visible"],
                req["hidden"].strip(),
                tuple(mutants),
                _alternatives(req.get("alternatives"), at),
            )
        )
    return tuple(out)


def _alternatives(raw: object, at: str) -> tuple[Alternative, ...]:
    """A requirement's ``alternatives:`` list (each ``{rule, input, mutant?}``); errors say where, what."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ValueError(f"{at}.alternatives: a list of {{rule, input, mutant?}}, got {raw!r}")
    out = []
    for j, alt in enumerate(raw):
        where = f"{at}.alternatives[{j}]"
        if not isinstance(alt, dict):
            raise ValueError(f"{where}: expected a mapping with {ALTERNATIVE_FIELDS}, got {alt!r}")
        unknown = sorted(set(alt) - set(ALTERNATIVE_FIELDS))
        if unknown:
            raise ValueError(f"{where}: unknown field(s) {unknown}; fields are {ALTERNATIVE_FIELDS}")
        for name in ("rule", "input"):
            value = alt.get(name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{where}.{name}: expected a non-empty string, got {value!r}")
        mutant = alt.get("mutant") or ""
        if not isinstance(mutant, str):
            raise ValueError(f"{where}.mutant: expected a mutant name, got {mutant!r}")
        out.append(Alternative(alt["rule"].strip(), alt["input"], mutant))
    return tuple(out)


def rubric_problems(rubric: Rubric, notebook_cells: dict[str, dict], solution_ids: set[str]) -> list[str]:
    """Every disagreement between a rubric and the notebook's nbgrader metadata, both ways (empty = agree).

    ``notebook_cells`` is :func:`autograder.source.graded_cells`; ``solution_ids`` the grade ids of answer
    cells.
    """
    problems = []
    if abs(rubric.total - 100) > 1e-9:
        problems.append(f"rubric total is {rubric.total}, must be 100")
    summed = sum(ex.points for ex in rubric.exercises)
    if abs(summed - rubric.total) > 1e-9:
        problems.append(f"graded cells sum to {summed}, rubric total says {rubric.total}")
    ids = [e.id for e in rubric.exercises]
    if len(set(ids)) != len(ids):
        problems.append(f"duplicate exercise ids: {ids}")
    cells = rubric.cell_points()
    for gid, (pts, kind) in cells.items():
        nb = notebook_cells.get(gid)
        if nb is None:
            problems.append(f"rubric cell {gid!r} is not a graded cell in the notebook")
            continue
        if abs(nb["points"] - pts) > 1e-9:
            problems.append(f"{gid}: rubric says {pts} points, notebook metadata says {nb['points']}")
        if nb["kind"] != kind:
            problems.append(f"{gid}: rubric kind {kind!r}, notebook cell is {nb['kind']!r}")
        if kind == "manual" and nb["cell_type"] != "markdown":
            problems.append(
                f"{gid}: manual cells must be markdown written answers, notebook has {nb['cell_type']}"
            )
    for gid in notebook_cells.keys() - cells.keys():
        problems.append(
            f"notebook graded cell {gid!r} ({notebook_cells[gid]['points']} points) is not in the rubric"
        )
    listed = {s for ex in rubric.exercises for s in ex.solution_cells}
    for sid in listed - solution_ids:
        problems.append(
            f"rubric solution cell {sid!r} is not an answer cell (solution: true) in the notebook"
        )
    code_answers = {s for s in solution_ids if s not in notebook_cells}  # answer cells that are not graded
    for sid in code_answers - listed:
        problems.append(f"notebook answer cell {sid!r} belongs to no rubric exercise (solution_cells)")
    for ex in rubric.exercises:
        if not ex.graded_cells:
            problems.append(f"exercise {ex.id!r} has no graded cells")
    return problems
