"""Writing results: one CSV row and one gradebook submission at a time, and merging shards into one.

Every write is atomic and keyed by (student, lab), so a grader killed at any moment leaves a CSV and a
gradebook holding exactly the submissions that had finished, and writing the same result twice is a no-op.
That same property makes ``python -m autograder merge`` idempotent: it is the per-row write applied to every
row of every shard.

    python -m autograder merge build/shards/*-of-4 [--out build/grades.csv] [--gradebook DB]
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import warnings
from pathlib import Path

import pandas as pd

log = logging.getLogger("autograder.merge")

BASE_COLUMNS = ["student", "lab", "score", "max_score"]
TAIL_COLUMNS = ["needs_manual", "status", "reason", "seconds"]


def run_file(csv: Path) -> Path:
    """Beside each CSV (``grades.csv`` -> ``grades.run.json``): seed, mode, every graded lab's fingerprint."""
    return Path(csv).with_name(Path(csv).stem + ".run.json")


TEXT_COLUMNS = ("student", "lab", "status", "reason")


def read_csv(path: Path) -> pd.DataFrame:
    """A grades CSV: text columns as str ('' when empty), points as floats (NaN: another lab's exercise)."""
    if not Path(path).exists() or Path(path).stat().st_size == 0:
        return pd.DataFrame(columns=BASE_COLUMNS + TAIL_COLUMNS)
    df = pd.read_csv(path, dtype={c: str for c in TEXT_COLUMNS}, keep_default_na=False)
    for c in df.columns:
        if c not in TEXT_COLUMNS:
            df[c] = pd.to_numeric(df[c].replace("", float("nan")), errors="coerce")
    return df


def _atomic_write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)  # readers see the old file or the new one, never half of one


def write_csv(rows: list[dict], out: Path) -> pd.DataFrame:
    """Merge ``rows`` into ``out`` keyed by (student, lab): replaced if present, added if not, others kept."""
    new = pd.DataFrame(rows)
    old = read_csv(out)
    if len(old) and len(new):
        keys = set(zip(new["student"], new["lab"], strict=True))
        old = old[[(s, lab) not in keys for s, lab in zip(old["student"], old["lab"], strict=True)]]
    df = pd.concat([d for d in (old, new) if len(d)], ignore_index=True) if len(old) or len(new) else new
    if df.empty:
        df = pd.DataFrame(columns=BASE_COLUMNS + TAIL_COLUMNS)
    extra = [c for c in df.columns if c not in BASE_COLUMNS + TAIL_COLUMNS]
    df = df.reindex(columns=BASE_COLUMNS + extra + TAIL_COLUMNS)
    df = df.sort_values(["lab", "student"]).reset_index(drop=True)
    _atomic_write_text(Path(out), df.to_csv(index=False))
    return df


def write_json(path: Path, data: dict) -> None:
    _atomic_write_text(Path(path), json.dumps(data, indent=1, sort_keys=True, default=str))


# ---- gradebook ---------------------------------------------------------------------------------------------
def _gradebook(db: Path):  # noqa: ANN202 - nbgrader Gradebook
    from nbgrader.api import Gradebook
    from sqlalchemy.exc import SAWarning

    warnings.filterwarnings("ignore", category=SAWarning)  # nbgrader's remove/add sequence is noisy, harmless
    return Gradebook(f"sqlite:///{db}")


def write_submission(
    db: Path,
    student: str,
    lab: str,
    cells: dict[str, dict],
    *,
    review_kept: bool = True,
    unchanged: frozenset[str] | set[str] = frozenset(),
) -> None:
    """Replace (student, lab) in gradebook ``db`` by ``cells`` (grade_id -> {score, needs_manual}).

    Hand-given points and comments (formgrader, ``manual``) survive: a regrade never loses them. A kept score
    whose written answer is ``unchanged`` since it was graded (same text) stays as graded (or pending, as it
    was); any other kept score is flagged for review (``needs_manual_grade``, as nbgrader's own autograde
    does) when ``review_kept`` (a new grading run of a changed answer); merging shards passes False, so a
    second merge changes nothing. One sqlite transaction per submission: a kill mid-way leaves the previous
    state (sqlite's journal).
    """
    from nbgrader.api import MissingEntry

    with _gradebook(db) as gb:
        gb.update_or_create_student(student)
        kept: dict[str, tuple] = {}
        said: dict[str, str] = {}
        try:
            old = gb.find_submission_notebook(lab, lab, student)
            kept = {
                g.name: (g.manual_score, g.extra_credit, g.needs_manual_grade)
                for g in old.grades
                if g.manual_score is not None or g.extra_credit is not None
            }
            said = {c.name: c.manual_comment for c in old.comments if c.manual_comment is not None}
            gb.remove_submission(lab, student)
        except MissingEntry:
            pass
        gb.add_submission(lab, student)
        nb = gb.find_submission_notebook(lab, lab, student)
        for g in nb.grades:
            c = cells.get(g.name)
            if c is not None:
                if c["needs_manual"]:
                    g.needs_manual_grade = True
                else:
                    g.auto_score, g.needs_manual_grade = c["score"], False
            if g.name in kept:
                g.manual_score, g.extra_credit, was_pending = kept[g.name]
                g.needs_manual_grade = bool((review_kept and g.name not in unchanged) or was_pending)
        for comment in nb.comments:
            if comment.name in said:
                comment.manual_comment = said[comment.name]
        changed = sorted(set(kept) - set(unchanged))
        if changed and review_kept:
            log.info(
                "%s/%s: hand-given points of %s kept, flagged for review (the written answer changed)",
                student,
                lab,
                ", ".join(changed),
            )
        gb.db.commit()


def read_submissions(db: Path) -> dict[tuple[str, str], dict[str, dict]]:
    """(student, lab) -> grade_id -> {score, needs_manual} of every submission in ``db``."""
    out: dict[tuple[str, str], dict[str, dict]] = {}
    with _gradebook(db) as gb:
        for a in gb.assignments:
            for sub in a.submissions:
                cells: dict[str, dict] = {}
                for nb in sub.notebooks:
                    for g in nb.grades:
                        cells[g.name] = {
                            "score": float(g.auto_score or 0.0),
                            "needs_manual": bool(g.needs_manual_grade),
                        }
                out[(sub.student.id, a.name)] = cells
    return out


def assignment_cells(db: Path) -> dict[str, dict[str, float]]:
    """lab -> grade_id -> max score, as the gradebook defines each assignment."""
    out: dict[str, dict[str, float]] = {}
    with _gradebook(db) as gb:
        for a in gb.assignments:
            out[a.name] = {gc.name: float(gc.max_score) for nb in a.notebooks for gc in nb.grade_cells}
    return out


def export_nbgrader(db: Path, out: Path) -> Path:
    """nbgrader's own CSV export of gradebook ``db``."""
    from nbgrader.plugins import CsvExportPlugin

    with _gradebook(db) as gb:
        CsvExportPlugin(to=str(out)).export(gb)
    return out


# ---- assignment fingerprints -------------------------------------------------------------------------------
def lab_fingerprint(source_notebook: Path) -> str:
    """sha256 over every graded cell of the nbgrader source (grade id, points, kind, source): two runs grade
    the same assignment iff their fingerprints agree."""
    import nbformat

    nb = nbformat.read(source_notebook, as_version=4)
    h = hashlib.sha256()
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {}) or {}
        if meta.get("grade"):
            h.update(json.dumps([meta["grade_id"], meta.get("points"), bool(meta.get("solution"))]).encode())
            if not meta.get("solution"):
                h.update(cell.source.encode())
    return h.hexdigest()[:16]


# ---- merging shards ----------------------------------------------------------------------------------------
def _check_runs(runs: dict[Path, dict]) -> None:
    """Refuse shards that graded different assignments, seeds or modes (their rows would not compare)."""
    first_dir, first = next(iter(runs.items()))
    for d, run in runs.items():
        for key in ("seed", "fast"):
            if run.get(key) != first.get(key):
                raise ValueError(
                    f"refusing to merge: {d} graded with {key}={run.get(key)!r}, {first_dir} with "
                    f"{key}={first.get(key)!r}; shards of one class share --seed and mode"
                )
        for lab, fp in run.get("labs", {}).items():
            other = next((r["labs"][lab] for r in runs.values() if lab in r.get("labs", {})), fp)
            if fp != other:
                raise ValueError(
                    f"refusing to merge: lab {lab} differs between shards (fingerprint {fp} in {d}, {other} "
                    "elsewhere): the assignment changed between shard runs; regrade them from one release"
                )


def merge_shards(shard_dirs: list[Path], out_csv: Path, gradebook: Path, finalize=None) -> pd.DataFrame:  # noqa: ANN001
    """Combine shard CSVs and gradebooks into ``out_csv`` and ``gradebook``; idempotent. Returns the CSV.
    ``finalize(rows, gradebook)`` (the CLI passes ``manual.final_rows`` for the course): each ``ok`` row then
    counts the hand-given points ``gradebook`` holds (a shard graded from an older gradebook copy does not
    know them), as ``export`` would. A callback, so that ``merge`` imports nothing of ``manual``."""
    import shutil

    if not shard_dirs:
        raise ValueError("merge needs at least one shard directory (each holding grades.csv, gradebook.db)")
    runs: dict[Path, dict] = {}
    for d in map(Path, shard_dirs):
        missing = [f for f in ("grades.csv", "gradebook.db") if not (d / f).exists()]
        if missing or not run_file(d / "grades.csv").exists():
            raise ValueError(
                f"{d} is not a shard directory: missing {missing or [run_file(d / 'grades.csv').name]} "
                "(written by grade --shard K/N)"
            )
        runs[d] = json.loads(run_file(d / "grades.csv").read_text())
    _check_runs(runs)
    if not gradebook.exists():  # a fresh course gradebook: any shard's holds the assignment definitions
        gradebook.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(next(iter(runs)) / "gradebook.db", gradebook)
    target = assignment_cells(gradebook)
    rows: list[pd.DataFrame] = []
    for d in runs:
        for lab, cells in assignment_cells(d / "gradebook.db").items():
            if lab in target and target[lab] != cells:
                raise ValueError(
                    f"refusing to merge {d}: assignment {lab} in its gradebook has cells {cells}, "
                    f"{gradebook} has {target[lab]}"
                )
        df = read_csv(d / "grades.csv")
        labs = set(df["lab"])
        for (student, lab), cells in sorted(read_submissions(d / "gradebook.db").items()):
            if lab in labs and lab in target:
                write_submission(gradebook, student, lab, cells, review_kept=False)
        # the written answers each shard graded: a later regrade on the course gradebook compares with them
        shard_answers = load_answers(d / "gradebook.db")
        record_answers(gradebook, {k: v for k, v in shard_answers.items() if k.rpartition("/")[2] in labs})
        rows.append(df)
    all_rows = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()
    dup = all_rows[all_rows.duplicated(["student", "lab"], keep=False)]
    if len(dup):
        raise ValueError(
            f"refusing to merge: {len(dup)} rows appear in more than one shard, e.g. "
            f"{dup[['student', 'lab']].head(3).to_dict('records')}; were the shards cut with the same N?"
        )
    records = all_rows.to_dict("records")
    if finalize is not None and records:  # hand-given points of the course gradebook (issue 35)
        finals = {(w["student"], w["lab"]): w for _, w in finalize(all_rows, gradebook)[0]}
        records = [{**r, **finals.get((r["student"], r["lab"]), {})} for r in records]
    merged = write_csv(records, out_csv)
    run = {**next(iter(runs.values())), "shard": None, "merged": [str(d) for d in runs]}
    run["labs"] = {lab: fp for r in runs.values() for lab, fp in r.get("labs", {}).items()}
    write_json(run_file(out_csv), run)
    export_nbgrader(gradebook, gradebook.parent / "grades_nbgrader.csv")
    log.info("merged %d shard(s), %d rows -> %s and %s", len(runs), len(all_rows), out_csv, gradebook)
    return merged


# ---- written answers as last graded (issue 35: hand points survive regrades) -----------------------------
def answers_file(db: Path) -> Path:
    """Beside a gradebook (``gradebook.db`` -> ``gradebook.answers.json``): per graded submission, the digest
    of each written answer as last graded. A regrade compares against it (grading rewrites the autograded
    notebook and the feedback folder, so neither can say what the hand-grader read)."""
    return Path(db).with_name(Path(db).stem + ".answers.json")


def load_answers(db: Path) -> dict[str, dict[str, str]]:
    import json

    try:
        return json.loads(answers_file(db).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def record_answers(db: Path, entries: dict[str, dict[str, str]]) -> None:
    """Merge ``entries`` ('student/lab' -> grade_id -> digest) into ``db``'s answers file (atomic)."""
    known = load_answers(db)
    if all(known.get(k) == v for k, v in entries.items()):
        return
    write_json(answers_file(db), {**known, **entries})


