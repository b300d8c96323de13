"""Hand grading and final grades: written answers scored from a CSV (or in nbgrader's formgrader), then one
export that folds those points into ``grades.csv`` and regenerates every student's feedback.

    python -m autograder manual --template build/manual.csv   # every written answer still to grade
    python -m autograder manual build/manual.csv              # its points and comments -> the gradebook
    python -m autograder export                               # final grades + feedback with the final score

The course gradebook (``build/nbgrader/gradebook.db``) is where hand-given points live, whichever way they
were given: formgrader writes the same ``manual_score`` and ``manual_comment`` fields the CSV import writes.
An import is one sqlite transaction and is refused as a whole, before anything is written, when any row is
bad.
"""

from __future__ import annotations

import csv
import logging
import math
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from nbgrader.preprocessors import NbGraderPreprocessor

from autograder.config import CourseConfig
from autograder.merge import answers_file, record_answers  # noqa: F401 - re-exported
from autograder.merge import load_answers as _load_answers

log = logging.getLogger("autograder.manual")

REQUIRED = ("student", "lab", "grade_id", "points")
TEMPLATE_COLUMNS = [
    "student",
    "lab",
    "grade_id",
    "max_points",
    "points",
    "comment",
    "criteria",
    "answer",
    "model_answer",
]
CONFIG_NAME = "nbgrader_config.py"


@dataclass(frozen=True)
class ManualGrade:
    """One hand-given score: ``comment`` None leaves the cell's comment as it is."""

    student: str
    lab: str
    grade_id: str
    points: float
    comment: str | None = None


@dataclass(frozen=True)
class _Cell:
    max_score: float
    manual: bool


def _gradebook(db: Path):  # noqa: ANN202 - nbgrader Gradebook
    from nbgrader.api import Gradebook

    if not Path(db).exists():
        raise ValueError(
            f"no gradebook at {db}: grade the class first (python -m autograder grade SUBMISSIONS)"
        )
    return Gradebook(f"sqlite:///{db}")


def _course_cells(gb) -> dict[str, dict[str, _Cell]]:  # noqa: ANN001 - nbgrader Gradebook
    """lab -> grade_id -> (max score, hand-graded?). A hand-graded cell is a graded cell that is also an
    answer cell (``solution: true``): nbgrader's definition, and the rubric's ``kind: manual``."""
    out: dict[str, dict[str, _Cell]] = {}
    for a in gb.assignments:
        cells: dict[str, _Cell] = {}
        for nb in a.notebooks:
            answers = {sc.name for sc in nb.solution_cells}
            for gc in nb.grade_cells:
                cells[gc.name] = _Cell(float(gc.max_score), gc.name in answers)
        out[a.name] = cells
    return out


# ---- import ------------------------------------------------------------------------------------------------
def _parse_points(text: str) -> float | str:
    """The points of one row, or why they are not a number."""
    try:
        v = float(text)
    except ValueError:
        return f"points {text!r} is not a number"
    if not math.isfinite(v):
        return f"points {text!r} is not a finite number"
    return v


def read_manual_csv(path: Path) -> list[tuple[int, dict[str, str]]]:
    """(line number, row) of every data row of ``path``; refuses a file without the required columns."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no such CSV: {path}")
    with open(path, newline="", encoding="utf-8-sig") as fh:  # -sig: spreadsheets often save a BOM
        reader = csv.DictReader(fh)
        header = [h.strip() for h in (reader.fieldnames or [])]
        missing = [c for c in REQUIRED if c not in header]
        if missing:
            raise ValueError(
                f"{path} lacks column(s) {missing}; its header is {header}; expected at least "
                f"{list(REQUIRED)} (and optionally comment); `manual --template OUT.csv` writes one"
            )
        rows = []
        for row in reader:
            clean = {(k or "").strip(): (v or "").strip() for k, v in row.items() if k is not None}
            if any(clean.values()):
                rows.append((reader.line_num, clean))
        return rows


def check_manual_rows(
    gb,  # noqa: ANN001 - nbgrader Gradebook
    rows: list[tuple[int, dict[str, str]]],
    statuses: dict[tuple[str, str], str] | None = None,
) -> tuple[list[ManualGrade], list[str], list[str]]:
    """(grades to write, problems, rows skipped): every row is checked against the gradebook and the grading
    ``statuses`` ((student, lab) -> grades.csv status); a row with no points at all is skipped (not graded
    yet, as a filled-in template leaves it)."""
    statuses = statuses or {}
    cells = _course_cells(gb)
    students = {s.id for s in gb.students}
    submitted = {(sub.student.id, a.name) for a in gb.assignments for sub in a.submissions}
    grades: list[ManualGrade] = []
    problems: list[str] = []
    skipped: list[str] = []
    first_line: dict[tuple[str, str, str], int] = {}
    for line, r in rows:
        student, lab, gid, raw = (
            r.get("student", ""),
            r.get("lab", ""),
            r.get("grade_id", ""),
            r.get("points"),
        )
        where = f"line {line} ({student or '?'}, {lab or '?'}, {gid or '?'})"
        if raw == "":
            skipped.append(f"{where}: no points")
            continue
        why: list[str] = []
        status = statuses.get((student, lab), "ok")
        if status != "ok":  # export folds only ok rows: a score given here would reach no grade
            why.append(
                f"{student}'s {lab} row has status {status}: no graded answer (fix and regrade it first)"
            )
        elif student not in students:
            why.append(f"unknown student {student!r}")
        if lab not in cells:
            why.append(f"unknown lab {lab!r} (the gradebook has {sorted(cells)})")
        elif gid not in cells[lab]:
            why.append(f"unknown grade_id {gid!r} in {lab} (its graded cells: {sorted(cells[lab])})")
        elif not cells[lab][gid].manual:
            hand = sorted(g for g, c in cells[lab].items() if c.manual)
            why.append(f"{gid!r} is auto-graded, not a hand-graded cell ({lab}'s hand-graded cells: {hand})")
        elif student in students and lab in cells and (student, lab) not in submitted:
            why.append(f"{student} has no graded submission of {lab}")
        points = _parse_points(raw)
        if isinstance(points, str):
            why.append(points)
        elif points < 0:
            why.append(f"points {raw} < 0")
        elif lab in cells and gid in cells[lab] and points > cells[lab][gid].max_score:
            why.append(f"points {raw} above the cell's maximum {cells[lab][gid].max_score:g}")
        key = (student, lab, gid)
        if key in first_line:
            why.append(f"repeats line {first_line[key]} (one score per cell)")
        else:
            first_line[key] = line
        if why:
            problems.append(f"{where}: " + "; ".join(why))
            continue
        comment = r.get("comment", "")
        grades.append(ManualGrade(student, lab, gid, float(points), comment if comment else None))
    return grades, problems, skipped


def import_manual(
    cfg: CourseConfig, csv_path: Path, db: Path | None = None, grades_csv: Path | None = None
) -> list[ManualGrade]:
    """Write the hand-given points (and comments) of ``csv_path`` into the course gradebook; returns them.

    Refuses the whole file (ValueError naming each bad line, nothing written) if any row names an unknown
    student, lab or cell, an auto-graded cell, a student with no graded submission, or points that are not a
    number in [0, the cell's maximum], or a row that ``grades_csv`` (default ``build/grades.csv``) says is
    not ``ok``. Only the named cells change: auto scores and every other cell keep their values; the last
    import of a cell wins.
    """
    from autograder.merge import read_csv

    db = Path(db or cfg.gradebook)
    write_formgrader_config(cfg)
    rows = read_manual_csv(csv_path)
    graded = read_csv(grades_csv or cfg.build / "grades.csv")
    statuses = dict(zip(zip(graded["student"], graded["lab"], strict=True), graded["status"], strict=True))
    with _gradebook(db) as gb:
        grades, problems, skipped = check_manual_rows(gb, rows, statuses)
        if problems:
            raise ValueError(
                f"refusing {csv_path}: nothing written; {len(problems)} bad row(s):\n  "
                + "\n  ".join(problems)
            )
        for g in grades:
            grade = gb.find_grade(g.grade_id, g.lab, g.lab, g.student)
            if grade.manual_score is not None and grade.manual_score != g.points:
                log.info(
                    "%s/%s %s: %g -> %g points", g.student, g.lab, g.grade_id, grade.manual_score, g.points
                )
            # formgrader's rule: a cell with a hand-given score no longer needs grading
            grade.manual_score, grade.needs_manual_grade = g.points, False
            if g.comment is not None:
                gb.find_comment(g.grade_id, g.lab, g.lab, g.student).manual_comment = g.comment
        gb.db.commit()  # one transaction: all rows or (on any failure before here) none
    for s in skipped:
        log.info("skipped %s", s)
    log.info(
        "%d hand-given score(s) written to %s; %d row(s) without points skipped",
        len(grades),
        db,
        len(skipped),
    )
    return grades


# ---- template ----------------------------------------------------------------------------------------------
def _answer_text(cfg: CourseConfig, student: str, lab: str, gid: str, cache: dict) -> str:
    """The student's answer in ``gid`` as graded (the autograded notebook), or where it should have been."""
    import nbformat

    path = cfg.nbgrader_root / "autograded" / student / lab / f"{lab}.ipynb"
    if path not in cache:
        cache[path] = nbformat.read(path, as_version=4) if path.exists() else None
    nb = cache[path]
    if nb is None:
        return f"(no autograded notebook at {path})"
    for cell in nb.cells:
        if (cell.get("metadata", {}).get("nbgrader", {}) or {}).get("grade_id") == gid:
            return cell.source
    return f"(no cell {gid} in {path})"


def mark_scheme(cfg: CourseConfig, lab: str) -> dict[str, tuple[str, str]]:
    """grade_id -> (the rubric's criteria for that written answer, the reference's answer text) of ``lab``:
    the criteria name the exercise and where the rubric lives; the reference answer is the model answer of the
    released source notebook."""
    import nbformat

    from autograder.rubrics import load_rubric

    out: dict[str, tuple[str, str]] = {}
    path = cfg.rubric / f"{lab}.yaml"
    model: dict[str, str] = {}
    src = cfg.nbgrader_root / "source" / lab / f"{lab}.ipynb"
    if src.exists():
        for cell in nbformat.read(src, as_version=4).cells:
            gid = (cell.get("metadata", {}).get("nbgrader", {}) or {}).get("grade_id")
            if gid:
                model[gid] = cell.source
    if not path.exists():
        return out
    for ex in load_rubric(path).exercises:
        for c in ex.graded_cells:
            if c.kind != "auto":
                title = ex.title or ex.id
                where = f"rubric {path.relative_to(cfg.root) if path.is_relative_to(cfg.root) else path}"
                text = f"{title}: {c.text or '(no criteria in the rubric)'} [{where}, exercise {ex.id}]"
                out[c.grade_id] = (" ".join(text.split()), model.get(c.grade_id, ""))
    return out


def write_template(cfg: CourseConfig, out: Path, *, every: bool = False, db: Path | None = None) -> int:
    """A CSV to grade in a spreadsheet: one row per written answer still to grade (``every``: every written
    answer, graded ones with their current points and comment), with the rubric's criteria, the student's
    answer and the reference's model answer; returns the number of rows. Sorted by lab, cell, student: one
    question across the class at a time."""
    db = Path(db or cfg.gradebook)
    write_formgrader_config(cfg)
    rows: list[dict] = []
    notebooks: dict = {}
    schemes: dict[str, dict[str, tuple[str, str]]] = {}
    with _gradebook(db) as gb:
        cells = _course_cells(gb)
        for a in gb.assignments:
            for sub in a.submissions:
                for nb in sub.notebooks:
                    for g in nb.grades:
                        cell = cells[a.name].get(g.name)
                        if cell is None or not cell.manual or not (g.needs_manual_grade or every):
                            continue
                        comment = gb.find_comment(g.name, nb.name, a.name, sub.student.id).manual_comment
                        if a.name not in schemes:
                            schemes[a.name] = mark_scheme(cfg, a.name)
                        criteria, model = schemes[a.name].get(g.name, ("", ""))
                        rows.append(
                            {
                                "student": sub.student.id,
                                "lab": a.name,
                                "grade_id": g.name,
                                "max_points": f"{cell.max_score:g}",
                                "points": "" if g.manual_score is None else f"{g.manual_score:g}",
                                "comment": comment or "",
                                "criteria": criteria,
                                "answer": _answer_text(cfg, sub.student.id, a.name, g.name, notebooks),
                                "model_answer": model,
                            }
                        )
    rows.sort(key=lambda r: (r["lab"], r["grade_id"], r["student"]))
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    with open(tmp, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=TEMPLATE_COLUMNS)
        w.writeheader()
        w.writerows(rows)
    tmp.replace(out)
    return len(rows)


# ---- formgrader --------------------------------------------------------------------------------------------
class RefuseAutograde(NbGraderPreprocessor):
    """formgrader's Autograde button would run student code unsandboxed and without the judge (hidden tests
    only record evidence): the course's config points it here instead."""

    def preprocess(self, nb, resources):  # noqa: ANN001, ANN201 - nbconvert signature
        raise RuntimeError(
            "this course autogrades with `python -m autograder grade SUBMISSIONS` (sandbox + judge); "
            "use formgrader for the written answers only"
        )


def write_formgrader_config(cfg: CourseConfig) -> Path:
    """``build/nbgrader/nbgrader_config.py``: nbgrader's formgrader (and nbgrader's command line) on this
    course's directory and gradebook. nbgrader reads it from the working directory, so JupyterLab is started
    from ``build/nbgrader`` (README, instructor path)."""
    root = cfg.nbgrader_root
    repo = Path(__file__).resolve().parents[1]
    text = f'''"""nbgrader configuration of this course's grading directory (written by python -m autograder;
rewritten on every grade, manual and export run: edit autograder/manual.py, not this file).

Formgrader for the written answers (nbgrader reads this file from the working directory):
    cd {root} && {repo}/.venv/bin/jupyter lab --ip=127.0.0.1 --no-browser --ServerApp.root_dir=.
As root (a container, a GPU node) add --allow-root: jupyter refuses to start as root without it.
Over ssh: ssh -L 8888:127.0.0.1:8888 HOST, then open the printed URL (with its token) on your machine.
Then go to /formgrader (JupyterLab menu: Nbgrader > Formgrader), Manual Grading: every graded submission
is listed (submitted_directory below is the autograded folder, where `grade` writes them).
Autograding stays with `python -m autograder grade` (sandbox + judge); feedback with `python -m autograder
export`, which folds the hand-given points into grades.csv and regenerates every student's feedback.
"""

import sys

sys.path.insert(0, {str(repo)!r})  # the course's preprocessors below

from autograder.manual import RefuseAutograde  # noqa: E402
from autograder.nbgrader_ext import HideHiddenTests  # noqa: E402
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor  # noqa: E402
from nbgrader.preprocessors import GetGrades  # noqa: E402

c = get_config()  # noqa: F821 - provided by traitlets when nbgrader loads this file
c.CourseDirectory.root = {str(root)!r}
c.CourseDirectory.db_url = {f"sqlite:///{cfg.gradebook}"!r}
# formgrader counts a lab's submissions from submitted/<student>/<lab>/; grading reads them from the class
# folder and writes autograded/<student>/<lab>/, so that folder is what formgrader lists
c.CourseDirectory.submitted_directory = "autograded"
c.Autograde.sanitize_preprocessors = [RefuseAutograde]
c.Autograde.autograde_preprocessors = [RefuseAutograde]
# formgrader's "Generate Feedback" must not show hidden tests' source either (export's feedback is the one to
# hand out: it also marks pending answers and wraps long messages)
c.GenerateFeedback.preprocessors = [HideHiddenTests, GetGrades, CSSHTMLHeaderPreprocessor]
'''
    path = root / CONFIG_NAME
    root.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        tmp = path.with_name(f".{CONFIG_NAME}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    return path


# ---- regrades ----------------------------------------------------------------------------------------------
def unchanged_answers(db: Path, o) -> set[str]:  # noqa: ANN001 - outcome.Outcome
    """grade_ids of ``o``'s written answers whose text is the one last graded into gradebook ``db``: a
    hand-given score of such an answer still holds after the regrade."""
    before = _load_answers(db).get(f"{o.student}/{o.lab}", {})
    return {gid for gid, digest in o.answers.items() if before.get(gid) == digest}


def with_hand_points(db: Path, o):  # noqa: ANN001, ANN201 - outcome.Outcome
    """``o`` with each cell's final score from gradebook ``db`` (the hand-given one where there is one) and
    whether it still waits for hand grading, so an ``ok`` row's CSV line shows what ``export`` shows; the
    answers graded now are recorded for the next regrade (:func:`unchanged_answers`)."""
    from dataclasses import replace

    from nbgrader.api import MissingEntry

    if o.answers:
        record_answers(db, {f"{o.student}/{o.lab}": o.answers})
    if o.status != "ok":
        return o
    try:
        with _gradebook(db) as gb:
            nb = gb.find_submission_notebook(o.lab, o.lab, o.student)
            got = {g.name: _final(g) for g in nb.grades}
    except (MissingEntry, ValueError):
        return o
    cells = {gid: {**c, **got.get(gid, {})} for gid, c in o.cells.items()}
    return replace(o, cells=cells)


# ---- export ------------------------------------------------------------------------------------------------
def _final(g) -> dict:  # noqa: ANN001 - nbgrader Grade
    """A cell's final {score, needs_manual}: the hand-given score where there is one, unless the cell waits
    for (re)grading (a written answer that changed since it was graded keeps its old points in the gradebook,
    but they do not count until it is graded again)."""
    pending = bool(g.needs_manual_grade)
    score = float(g.auto_score or 0.0) if pending else float(g.score or 0.0)
    return {"score": score, "needs_manual": pending}


def final_cells(db: Path) -> dict[tuple[str, str], dict[str, dict]]:
    """(student, lab) -> grade_id -> {score (hand-given if any, else auto), needs_manual} of the gradebook."""
    out: dict[tuple[str, str], dict[str, dict]] = {}
    with _gradebook(db) as gb:
        for a in gb.assignments:
            for sub in a.submissions:
                out[(sub.student.id, a.name)] = {g.name: _final(g) for nb in sub.notebooks for g in nb.grades}
    return out


def regenerate_feedback(cfg: CourseConfig, student: str, lab: str, db: Path | None = None) -> str:
    """Feedback HTML of one graded submission from its autograded notebook and the gradebook's scores, then
    annotated; returns '' or why it failed (the previous page is then kept)."""
    from nbgrader.converters import GenerateFeedback
    from nbgrader.coursedir import CourseDirectory

    from autograder.feedback import annotate_feedback, exercise_titles, pending_manual
    from autograder.nbgrader_ext import capture, nbgrader_config

    db = Path(db or cfg.gradebook)
    if not (cfg.nbgrader_root / "autograded" / student / lab / f"{lab}.ipynb").exists():
        return "no autograded notebook"
    page = cfg.nbgrader_root / "feedback" / student / lab / f"{lab}.html"
    keep = page.with_name(f".{page.name}.previous")
    if page.exists():  # nbgrader removes the page before converting (force): a failure must not lose it
        shutil.copy2(page, keep)
    c = nbgrader_config(cfg, db_path=db)
    coursedir = CourseDirectory(config=c)
    coursedir.assignment_id, coursedir.student_id = lab, student
    # one notebook, not the whole folder: nbgrader's force removes the folder (grading.json with it) otherwise
    coursedir.notebook_id = lab
    app = GenerateFeedback(coursedir=coursedir, config=c)
    app.force = True
    res = capture(app)
    if not res["success"] or not page.exists():
        if keep.exists():
            keep.replace(page)
        return ("feedback failed: " + (res.get("error") or res.get("log", ""))[-300:]).strip()
    annotate_feedback(page, exercise_titles(cfg, lab), pending_manual(db, lab, student))
    keep.unlink(missing_ok=True)
    return ""


def _refresh_grading_json(cfg: CourseConfig, o, row: dict) -> None:  # noqa: ANN001 - outcome.Outcome
    """The row's ``grading.json`` with the exported cells and row; every other key (messages, answers, seed)
    as grading wrote it. Unchanged content is not rewritten (a second export touches nothing)."""
    import json

    from autograder.merge import write_json

    path = cfg.nbgrader_root / "feedback" / o.student / o.lab / "grading.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    new = {**data, "cells": o.cells, "row": row}
    if json.loads(json.dumps(new, default=str)) != data:
        write_json(path, new)


def final_rows(cfg: CourseConfig, df: pd.DataFrame, db: Path) -> tuple[list[tuple], list[str]]:
    """([(Outcome, CSV row)] of every ``ok`` row of ``df`` recomputed from gradebook ``db``: auto plus
    hand-given points, ``needs_manual`` = points still ungraded; ['student/lab' of ok rows ``db`` lacks])."""
    from autograder.outcome import Outcome, outcome_row, source_cells

    gb_cells = final_cells(db)
    lab_cells: dict[str, dict[str, dict]] = {}
    finals: list[tuple] = []
    absent: list[str] = []
    for r in df.to_dict("records"):
        key = (r["student"], r["lab"])
        if r["status"] != "ok":
            continue
        if key not in gb_cells:
            absent.append(f"{r['student']}/{r['lab']}")
            continue
        if r["lab"] not in lab_cells:
            lab_cells[r["lab"]] = source_cells(cfg, r["lab"])
        cells = {gid: dict(c) for gid, c in lab_cells[r["lab"]].items()}
        for gid, got in gb_cells[key].items():
            if gid in cells:
                cells[gid].update(got)
        o = Outcome(r["student"], r["lab"], r["status"], r["reason"], cells, float(r["seconds"] or 0.0))
        finals.append((o, outcome_row(cfg, o)))
    return finals, absent


def export(
    cfg: CourseConfig, *, out: Path | None = None, feedback: bool = True, progress: bool = True
) -> pd.DataFrame:
    """Final grades: every ``ok`` row of ``out`` (default ``build/grades.csv``) rewritten from the course
    gradebook (auto + hand-given points, ``needs_manual`` = points still ungraded), each such student's
    feedback regenerated with the final score (unless ``feedback`` is False), nbgrader's own CSV export and
    the summary refreshed. Rows of other statuses are kept as they are. Returns the CSV."""
    from autograder.merge import export_nbgrader, read_csv, write_csv
    from autograder.plots import summarize

    out = Path(out or cfg.build / "grades.csv")
    db = cfg.gradebook
    write_formgrader_config(cfg)
    df = read_csv(out)
    if df.empty:
        raise ValueError(f"no rows in {out}: grade the class first (python -m autograder grade SUBMISSIONS)")
    finals, absent = final_rows(cfg, df, db)
    rows = [row for _, row in finals]
    if absent:
        log.warning(
            "%d ok row(s) of %s have no submission in %s (a shard not merged yet?), left as they are: %s",
            len(absent),
            out,
            db,
            ", ".join(absent[:5]) + (" ..." if len(absent) > 5 else ""),
        )
    merged = write_csv(rows, out)
    for o, row in finals:  # grading.json says what grades.csv says: the final cells and row
        _refresh_grading_json(cfg, o, row)
    failed: list[str] = []
    if feedback:
        t0 = time.monotonic()
        for r in rows:
            why = regenerate_feedback(cfg, r["student"], r["lab"], db)
            if why:
                failed.append(f"{r['student']}/{r['lab']}: {why}")
        log.info(
            "feedback regenerated for %d submission(s) in %.1f s",
            len(rows) - len(failed),
            time.monotonic() - t0,
        )
    for f in failed:
        log.warning("feedback of %s", f)
    export_nbgrader(db, db.parent / "grades_nbgrader.csv")
    summarize(cfg, merged, out, progress=progress)
    pending = merged[merged["status"] == "ok"]["needs_manual"].fillna(0)
    log.info(
        "exported %d graded row(s) to %s; %d still have written answers to grade (%g points)",
        len(rows),
        out,
        int((pending > 0).sum()),
        float(pending.sum()),
    )
    return merged
