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

log = logging.getLogger("autograder.manual")

REQUIRED = ("student", "lab", "grade_id", "points")
TEMPLATE_COLUMNS = ["student", "lab", "grade_id", "max_points", "points", "comment", "answer"]
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


def write_template(cfg: CourseConfig, out: Path, *, every: bool = False, db: Path | None = None) -> int:
    """A CSV to grade in a spreadsheet: one row per written answer still to grade (``every``: every written
    answer, graded ones with their current points and comment), with the student's answer; returns the number
    of rows. Sorted by lab, cell, student: one question across the class at a time."""
    db = Path(db or cfg.gradebook)
    write_formgrader_config(cfg)
    rows: list[dict] = []
    notebooks: dict = {}
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
                        rows.append(
                            {
                                "student": sub.student.id,
                                "lab": a.name,
                                "grade_id": g.name,
                                "max_points": f"{cell.max_score:g}",
                                "points": "" if g.manual_score is None else f"{g.manual_score:g}",
                                "comment": comment or "",
                                "answer": _answer_text(cfg, sub.student.id, a.name, g.name, notebooks),
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
then open the printed URL and go to /formgrader (JupyterLab menu: Nbgrader > Formgrader), Manual Grading.
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


# ---- export ------------------------------------------------------------------------------------------------
def final_cells(db: Path) -> dict[tuple[str, str], dict[str, dict]]:
    """(student, lab) -> grade_id -> {score (hand-given if any, else auto), needs_manual} of the gradebook."""
    out: dict[tuple[str, str], dict[str, dict]] = {}
    with _gradebook(db) as gb:
        for a in gb.assignments:
            for sub in a.submissions:
                out[(sub.student.id, a.name)] = {
                    g.name: {"score": float(g.score or 0.0), "needs_manual": bool(g.needs_manual_grade)}
                    for nb in sub.notebooks
                    for g in nb.grades
                }
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


def export(
    cfg: CourseConfig, *, out: Path | None = None, feedback: bool = True, progress: bool = True
) -> pd.DataFrame:
    """Final grades: every ``ok`` row of ``out`` (default ``build/grades.csv``) rewritten from the course
    gradebook (auto + hand-given points, ``needs_manual`` = points still ungraded), each such student's
    feedback regenerated with the final score (unless ``feedback`` is False), nbgrader's own CSV export and
    the summary refreshed. Rows of other statuses are kept as they are. Returns the CSV."""
    from autograder.merge import export_nbgrader, read_csv, write_csv
    from autograder.outcome import Outcome, outcome_row, source_cells
    from autograder.plots import summarize

    out = Path(out or cfg.build / "grades.csv")
    db = cfg.gradebook
    write_formgrader_config(cfg)
    df = read_csv(out)
    if df.empty:
        raise ValueError(f"no rows in {out}: grade the class first (python -m autograder grade SUBMISSIONS)")
    gb_cells = final_cells(db)
    lab_cells: dict[str, dict[str, dict]] = {}
    rows: list[dict] = []
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
        rows.append(outcome_row(cfg, o))
    if absent:
        log.warning(
            "%d ok row(s) of %s have no submission in %s (a shard not merged yet?), left as they are: %s",
            len(absent),
            out,
            db,
            ", ".join(absent[:5]) + (" ..." if len(absent) > 5 else ""),
        )
    merged = write_csv(rows, out)
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
