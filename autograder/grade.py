"""``python -m autograder grade <submissions-dir>``: autograde every student x lab, safely, in parallel.

Layout read: ``<submissions-dir>/<student>/<lab>/<lab>.ipynb`` (nbgrader's submitted layout). Each
submission is
graded by its own ``autograder.worker`` process (own session, own copy of the gradebook, own wall-clock
cap), so a
notebook that loops, hangs a process group, segfaults a rank, kills its kernel or copies an nbgrader cell
costs that
one row and nothing else. Afterwards the results are merged into the course gradebook (``build/nbgrader``, for
formgrader and ``nbgrader export``) and into one CSV row per student x lab::

    student, lab, score, max_score, <exercise points...>, needs_manual, status, reason

Re-running replaces the rows it grades and keeps the others (keyed by student, lab): nothing lost or
duplicated.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pandas as pd

from autograder.config import CourseConfig
from autograder.procs import TOKEN_VAR, kill_tree
from autograder.rubrics import load_rubric

log = logging.getLogger("autograder.grade")

BASE_COLUMNS = ["student", "lab", "score", "max_score"]
TAIL_COLUMNS = ["needs_manual", "status", "reason", "seconds"]


@dataclass
class Submission:
    student: str
    lab: str
    notebook: Path


@dataclass
class Outcome:
    student: str
    lab: str
    status: str  # ok | error | timeout | missing
    reason: str = ""
    cells: dict[str, dict] = field(default_factory=dict)  # grade_id -> {score, max_score, kind, needs_manual}
    seconds: float = 0.0
    leftovers_killed: int = 0


def find_submissions(root: Path, labs: list[str] | None = None) -> list[Submission]:
    """Every ``<student>/<lab>/`` folder under ``root`` (a missing notebook still yields a submission)."""
    root = Path(root)
    if not root.is_dir():
        raise ValueError(
            f"submissions directory {root} does not exist; expected <dir>/<student>/<lab>/<lab>.ipynb"
        )
    subs = []
    for sdir in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for ldir in sorted(p for p in sdir.iterdir() if p.is_dir() and not p.name.startswith(".")):
            if labs and ldir.name not in labs:
                continue
            subs.append(Submission(sdir.name, ldir.name, ldir / f"{ldir.name}.ipynb"))
    return subs


def _config_json(cfg: CourseConfig) -> dict:
    d = asdict(cfg)
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in d.items()}


# ---- reasons -----------------------------------------------------------------------------------------------
_LOG_CAUSES = [
    ("DeadKernelError", "kernel died during execution (os._exit, segfault or out of memory in the kernel)"),
    ("Kernel died", "kernel died during execution (os._exit, segfault or out of memory in the kernel)"),
    ("exists multiple times", None),  # nbgrader's own message names the cell: keep it
    ("became unresponsive", "kernel unresponsive after the cell timeout (a loop that ignores interrupts?)"),
    (
        "UnresponsiveKernelError",
        "kernel unresponsive after the cell timeout (a loop that ignores interrupts?)",
    ),
    ("CellTimeoutError", "a cell hit the per-cell timeout and the kernel did not recover"),
    ("TimeoutError", "a cell hit the per-cell timeout and the kernel did not recover"),
]


def failure_reason(text: str) -> str:
    for needle, reason in _LOG_CAUSES:
        if needle in text:
            if reason is None:
                line = next(ln for ln in text.splitlines() if needle in ln)
                return " ".join(line.split())[-200:]
            return reason
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errs = [ln for ln in lines if "Error" in ln or "Exception" in ln]
    return (errs[-1] if errs else (lines[-1] if lines else "nbgrader failed without a message"))[-200:]


def cell_errors(notebook: Path) -> dict[str, str]:
    """grade_id -> 'Ename: first line of message' for graded cells with an error output in the autograded
    notebook."""
    import nbformat

    out: dict[str, str] = {}
    if not notebook.exists():
        return out
    nb = nbformat.read(notebook, as_version=4)
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if not meta.get("grade") or cell.cell_type != "code":
            continue
        errs = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        results = [o for o in cell.get("outputs", []) if o.get("output_type") == "execute_result"]
        stderr = [
            o
            for o in cell.get("outputs", [])
            if o.get("output_type") == "stream" and o.get("name") == "stderr"
        ]
        if not errs and stderr:
            first = (stderr[0].get("text") or "").strip().splitlines()[:1]
            out[meta["grade_id"]] = (
                f"wrote to stderr (nbgrader scores that as a failure): {''.join(first)[:120]}"
            )
        elif not errs and results:
            out[meta["grade_id"]] = (
                "the cell's last expression is a number below full marks (nbgrader partial credit)"
            )
        if errs:
            names = []
            for e in errs:
                msg = (e.get("evalue") or "").strip().splitlines()
                names.append(f"{e.get('ename')}: {msg[0][:120]}" if msg else str(e.get("ename")))
            out[meta["grade_id"]] = " / ".join(dict.fromkeys(names))
    return out


def read_grades(db: Path, lab: str, student: str) -> dict[str, dict]:
    from nbgrader.api import Gradebook

    cells = {}
    with Gradebook(f"sqlite:///{db}") as gb:
        nb = gb.find_submission_notebook(lab, lab, student)
        for g in nb.grades:
            cells[g.name] = {"score": float(g.score or 0.0), "needs_manual": bool(g.needs_manual_grade)}
    return cells


def source_cells(cfg: CourseConfig, lab: str) -> dict[str, dict]:
    """Graded cells of the released lab (used for zero rows when grading failed)."""
    import nbformat

    from autograder.source import graded_cells

    nb = nbformat.read(cfg.nbgrader_root / "source" / lab / f"{lab}.ipynb", as_version=4)
    return {
        gid: {"score": 0.0, "max_score": c["points"], "kind": c["kind"], "needs_manual": False}
        for gid, c in graded_cells(nb).items()
    }


# ---- one submission ----------------------------------------------------------------------------------------
def grade_one(cfg: CourseConfig, sub: Submission, run_dir: Path, *, feedback: bool = True) -> Outcome:
    t0 = time.monotonic()
    if not sub.notebook.exists():
        return Outcome(
            sub.student,
            sub.lab,
            "missing",
            f"no {sub.notebook.name} in {sub.notebook.parent}",
            cells=source_cells(cfg, sub.lab),
        )
    work = run_dir / f"{sub.student}__{sub.lab}"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    db = work / "gradebook.db"
    shutil.copy2(run_dir / "template.db", db)
    spec = {
        "config": _config_json(cfg),
        "student": sub.student,
        "lab": sub.lab,
        "db": str(db),
        "submitted": str(sub.notebook.parent.parent.parent.resolve()),
        "result": str(work / "result.json"),
        "feedback": feedback,
    }
    (work / "spec.json").write_text(json.dumps(spec))
    token = f"{uuid.uuid4().hex}-{sub.student}-{sub.lab}"
    env = dict(os.environ)
    env.update(cfg.kernel_environ())
    env[TOKEN_VAR] = token
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(cfg.root), str(Path(__file__).resolve().parents[1]), env.get("PYTHONPATH", "")])
    )
    status, reason = "ok", ""
    with open(work / "worker.log", "wb") as logf:
        proc = subprocess.Popen(
            [sys.executable, "-m", "autograder.worker", str(work / "spec.json")],
            cwd=work,
            env=env,
            stdout=logf,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            proc.wait(timeout=cfg.notebook_timeout)
        except subprocess.TimeoutExpired:
            status = "timeout"
            reason = f"killed after the {cfg.notebook_timeout:.0f} s per-submission cap (whole process tree)"
        leftovers = kill_tree(proc.pid, token)
        proc.wait()
    seconds = time.monotonic() - t0
    result_path = work / "result.json"
    result = json.loads(result_path.read_text()) if result_path.exists() else None
    if status == "ok":
        if result is None:
            status = "error"
            tail = (work / "worker.log").read_text(errors="replace")[-2000:]
            reason = f"grading worker exited {proc.returncode}: {failure_reason(tail)}"
        elif not result["success"]:
            status = "error"
            reason = failure_reason(result.get("log", "") + "\n" + result.get("error", ""))
    cells = source_cells(cfg, sub.lab)
    if status == "ok":
        for gid, got in read_grades(db, sub.lab, sub.student).items():
            if gid in cells:
                cells[gid].update(got)
        autograded = cfg.nbgrader_root / "autograded" / sub.student / sub.lab / f"{sub.lab}.ipynb"
        errs = cell_errors(autograded)
        failed = [
            f"{gid}: {errs.get(gid, 'no points')}"
            for gid, c in cells.items()
            if c["kind"] == "auto" and c["score"] < c["max_score"]
        ]
        reason = "; ".join(failed)
        if result and result.get("feedback_ok") is False:
            reason = (
                (reason + "; " if reason else "")
                + "feedback failed: "
                + failure_reason(result["feedback_log"])
            )
    if leftovers and status == "ok":
        reason = (reason + "; " if reason else "") + f"killed {leftovers} leftover process(es)"
    return Outcome(sub.student, sub.lab, status, reason, cells, seconds, leftovers)


# ---- rows, CSV, gradebook ----------------------------------------------------------------------------------
def outcome_row(cfg: CourseConfig, o: Outcome) -> dict:
    row: dict = {"student": o.student, "lab": o.lab}
    row["score"] = round(sum(c["score"] for c in o.cells.values()), 4)
    row["max_score"] = round(sum(c["max_score"] for c in o.cells.values()), 4)
    rubric_path = cfg.rubric / f"{o.lab}.yaml"
    if rubric_path.exists():
        for ex in load_rubric(rubric_path).exercises:
            row[ex.id] = round(sum(o.cells.get(c.grade_id, {}).get("score", 0.0) for c in ex.graded_cells), 4)
    else:
        for gid, c in o.cells.items():
            row[gid] = c["score"]
    row["needs_manual"] = round(sum(c["max_score"] for c in o.cells.values() if c["needs_manual"]), 4)
    row["status"], row["reason"], row["seconds"] = o.status, o.reason, round(o.seconds, 1)
    return row


def write_csv(rows: list[dict], out: Path) -> pd.DataFrame:
    """Merge ``rows`` into ``out`` keyed by (student, lab): replaced if present, added if not, others kept."""
    new = pd.DataFrame(rows)
    if out.exists() and out.stat().st_size > 0:
        old = pd.read_csv(out, dtype={"student": str, "lab": str}, keep_default_na=False)
        keys = set(zip(new["student"], new["lab"], strict=True))
        old = old[[(s, lab) not in keys for s, lab in zip(old["student"], old["lab"], strict=True)]]
        df = pd.concat([old, new], ignore_index=True)
    else:
        df = new
    extra = [c for c in df.columns if c not in BASE_COLUMNS + TAIL_COLUMNS]
    df = df[BASE_COLUMNS + extra + TAIL_COLUMNS].sort_values(["lab", "student"]).reset_index(drop=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    df.to_csv(tmp, index=False)
    tmp.replace(out)
    return df


def merge_into_gradebook(cfg: CourseConfig, o: Outcome) -> None:
    """Copy one graded submission into the course gradebook (what formgrader and ``nbgrader export`` read)."""
    import warnings

    from nbgrader.api import Gradebook, MissingEntry
    from sqlalchemy.exc import SAWarning

    warnings.filterwarnings(
        "ignore", category=SAWarning
    )  # nbgrader's own remove/add sequence is noisy, harmless
    with Gradebook(f"sqlite:///{cfg.gradebook}") as gb:
        gb.update_or_create_student(o.student)
        try:
            gb.remove_submission(o.lab, o.student)
        except MissingEntry:
            pass
        gb.add_submission(o.lab, o.student)
        nb = gb.find_submission_notebook(o.lab, o.lab, o.student)
        for g in nb.grades:
            c = o.cells.get(g.name)
            if c is None:
                continue
            if c["needs_manual"]:
                g.needs_manual_grade = True
            else:
                g.auto_score, g.needs_manual_grade = c["score"], False
        gb.db.commit()


def export_nbgrader(cfg: CourseConfig) -> Path:
    """nbgrader's own CSV export of the course gradebook (build/nbgrader/grades_nbgrader.csv)."""
    from nbgrader.api import Gradebook
    from nbgrader.plugins import CsvExportPlugin

    out = cfg.nbgrader_root / "grades_nbgrader.csv"
    with Gradebook(f"sqlite:///{cfg.gradebook}") as gb:
        CsvExportPlugin(to=str(out)).export(gb)
    return out


# ---- the run -----------------------------------------------------------------------------------------------
def grade(
    cfg: CourseConfig,
    submissions: Path,
    *,
    labs: list[str] | None = None,
    out: Path | None = None,
    feedback: bool = True,
    progress: bool = True,
) -> pd.DataFrame:
    """Grade every submission under ``submissions``; returns the rows of this run (CSV holds all runs)."""
    from tqdm.auto import tqdm

    from autograder.release import ensure_released

    subs = find_submissions(submissions, labs)
    known = set(cfg.lab_ids())
    skipped = [s for s in subs if s.lab not in known]
    for s in skipped:
        log.warning("skipping %s/%s: no lab %r under %s", s.student, s.lab, s.lab, cfg.solutions)
    subs = [s for s in subs if s.lab in known]
    if not subs:
        raise ValueError(f"no submissions of known labs {sorted(known)} under {submissions}")
    for lab in sorted({s.lab for s in subs}):
        ensure_released(cfg, lab)
    run_dir = cfg.build / "grading"
    run_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy2(cfg.gradebook, run_dir / "template.db")  # snapshot: workers never write the course gradebook
    outcomes: list[Outcome] = []
    with ThreadPoolExecutor(max_workers=cfg.workers) as pool:
        futures = {pool.submit(grade_one, cfg, s, run_dir, feedback=feedback): s for s in subs}
        bar = tqdm(total=len(subs), desc="autograde", unit="nb", disable=not progress)
        for fut in as_completed(futures):
            s = futures[fut]
            try:
                o = fut.result()
            except Exception as exc:  # a bug in the grader itself: still one row, never a lost student
                log.exception("grading %s/%s failed", s.student, s.lab)
                o = Outcome(
                    s.student, s.lab, "error", f"grader error: {exc!r}", cells=source_cells(cfg, s.lab)
                )
            outcomes.append(o)
            bar.set_postfix_str(f"{o.student}/{o.lab}: {o.status}")
            bar.update()
        bar.close()
    for o in sorted(outcomes, key=lambda o: (o.lab, o.student)):
        merge_into_gradebook(cfg, o)
    export_nbgrader(cfg)
    rows = [outcome_row(cfg, o) for o in outcomes]
    df = write_csv(rows, out or cfg.build / "grades.csv")
    keys = {(o.student, o.lab) for o in outcomes}
    return df[[(s, lab) in keys for s, lab in zip(df["student"], df["lab"], strict=True)]].reset_index(
        drop=True
    )
