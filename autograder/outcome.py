"""From a worker's result to what the instructor reads: per-cell scores, one short reason per failing exercise
(the CSV's ``reason``), and every message in full (``grading.json`` beside the feedback)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from autograder.config import CourseConfig

SHORT = 110  # characters of one exercise's reason in the CSV
FULL = 4000  # characters of one cell's messages in grading.json
SEP = " | "  # between exercises in the CSV's reason (messages themselves often hold "; ")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@dataclass
class Outcome:
    student: str
    lab: str
    status: str  # ok | needs_review (tamper scan: points withheld) | error | timeout | missing
    reason: str = ""
    cells: dict[str, dict] = field(default_factory=dict)  # grade_id -> {score, max_score, kind, needs_manual}
    seconds: float = 0.0
    leftovers_killed: int = 0
    messages: dict[str, str] = field(default_factory=dict)  # grade_id -> every message of that cell, in full
    timings: dict[str, float] = field(default_factory=dict)  # autograde_s, exec_s, feedback_s (worker side)
    # grade_id -> digest of each written answer as graded: a regrade keeps a hand-given score as graded when
    # the answer is unchanged, and flags it for review when it changed (autograder.manual.unchanged_answers)
    answers: dict[str, str] = field(default_factory=dict)


def shorten(text: str, limit: int = SHORT) -> str:
    """First line of ``text``, cut at a word boundary (never mid-value) with an ellipsis."""
    line = " ".join((text.strip().splitlines() or [""])[0].split())
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    cut = cut[: cut.rfind(" ")] if " " in cut[limit // 2 :] else cut
    return cut.rstrip(",;:") + "…"


_LOG_CAUSES = [
    # first: the grader kills an unresponsive kernel, and nbgrader then reports it dead too
    (
        "became unresponsive",
        "kernel unresponsive after the per-cell timeout (a loop that ignores interrupts?)",
    ),
    ("DeadKernelError", "kernel died during execution (os._exit, segfault or out of memory in the kernel)"),
    ("Kernel died", "kernel died during execution (os._exit, segfault or out of memory in the kernel)"),
    ("exists multiple times", None),  # nbgrader's own message names the cell: keep it
    (
        "UnresponsiveKernelError",
        "kernel unresponsive after the per-cell timeout (a loop that ignores interrupts?)",
    ),
    ("CellTimeoutError", "a cell hit the per-cell timeout and the kernel did not recover"),
    ("TimeoutError", "a cell hit the per-cell timeout and the kernel did not recover"),
]


def failure_reason(text: str) -> str:
    """Why nbgrader could not grade at all, from its log: a known cause, else the last error line."""
    for needle, reason in _LOG_CAUSES:
        if needle in text:
            if reason is None:
                line = next(ln for ln in text.splitlines() if needle in ln)
                return " ".join(line.split())[-200:]
            return reason
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errs = [ln for ln in lines if "Error" in ln or "Exception" in ln]
    return (errs[-1] if errs else (lines[-1] if lines else "nbgrader failed without a message"))[-200:]


def cell_messages(notebook: Path) -> dict[str, str]:
    """grade_id -> the full failure text of each graded code cell of the autograded notebook that failed."""
    import nbformat

    out: dict[str, str] = {}
    if not notebook.exists():
        return out
    for cell in nbformat.read(notebook, as_version=4).cells:
        meta = cell.get("metadata", {}).get("nbgrader", {}) or {}
        if not meta.get("grade") or cell.cell_type != "code":
            continue
        outputs = cell.get("outputs", [])
        errs = [o for o in outputs if o.get("output_type") == "error"]
        if errs:
            texts = [f"{e.get('ename')}: {_ANSI.sub('', str(e.get('evalue') or '')).strip()}" for e in errs]
            out[meta["grade_id"]] = "\n".join(dict.fromkeys(texts))[:FULL]
        elif any(o.get("output_type") == "stream" and o.get("name") == "stderr" for o in outputs):
            text = next(o.get("text", "") for o in outputs if o.get("name") == "stderr")
            out[meta["grade_id"]] = (
                f"wrote to stderr (nbgrader scores that as a failure): {text.strip()[:FULL]}"
            )
        elif any(o.get("output_type") == "execute_result" for o in outputs):
            out[meta["grade_id"]] = "the cell's last expression is a number below full marks (partial credit)"
    return out


def answer_digest(text: str) -> str:
    """A written answer's identity across regrades (whitespace at the ends and line endings ignored)."""
    norm = "\n".join(line.rstrip() for line in text.strip().splitlines())
    return hashlib.sha256(norm.encode()).hexdigest()[:16]


def written_answers(notebook: Path, cells: dict[str, dict]) -> dict[str, str]:
    """grade_id -> digest of each hand-graded (``kind: manual``) cell's text in the autograded notebook."""
    import nbformat

    if not notebook.exists():
        return {}
    out: dict[str, str] = {}
    for cell in nbformat.read(notebook, as_version=4).cells:
        gid = (cell.get("metadata", {}).get("nbgrader", {}) or {}).get("grade_id")
        if gid in cells and cells[gid].get("kind") == "manual":
            out[gid] = answer_digest(cell.source)
    return out


def read_grades(db: Path, lab: str, student: str) -> dict[str, dict]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{db}") as gb:
        nb = gb.find_submission_notebook(lab, lab, student)
        return {
            g.name: {"score": float(g.score or 0.0), "needs_manual": bool(g.needs_manual_grade)}
            for g in nb.grades
        }


def source_cells(cfg: CourseConfig, lab: str) -> dict[str, dict]:
    """Graded cells of the released lab, all at 0 (rows of submissions that could not be graded)."""
    import nbformat

    from autograder.source import graded_cells

    path = cfg.nbgrader_root / "source" / lab / f"{lab}.ipynb"
    if not path.exists():
        return {}
    return {
        gid: {"score": 0.0, "max_score": c["points"], "kind": c["kind"], "needs_manual": False}
        for gid, c in graded_cells(nbformat.read(path, as_version=4)).items()
    }


def _exercises(cfg: CourseConfig, lab: str) -> list[tuple[str, list[str]]]:
    """[(exercise id, its graded cell ids)] in rubric order; one pseudo-exercise per cell without a rubric."""
    from autograder.rubrics import load_rubric

    path = cfg.rubric / f"{lab}.yaml"
    if not path.exists():
        return []
    return [(ex.id, [c.grade_id for c in ex.graded_cells]) for ex in load_rubric(path).exercises]


def exercise_reasons(cfg: CourseConfig, lab: str, cells: dict[str, dict], messages: dict[str, str]) -> str:
    """'ring: AssertionError: world 3 … | save: no points': one short reason per exercise that lost points."""
    groups = _exercises(cfg, lab) or [(gid, [gid]) for gid in cells]
    parts = []
    for ex, gids in groups:
        lost = [
            g
            for g in gids
            if g in cells and cells[g]["kind"] == "auto" and cells[g]["score"] < cells[g]["max_score"]
        ]
        if lost:
            first = next((g for g in lost if g in messages), lost[0])
            parts.append(f"{ex}: {shorten(messages.get(first, 'no points'))}")
    return SEP.join(parts)


def outcome_from_result(
    cfg: CourseConfig,
    sub,  # noqa: ANN001 - shard.Submission
    work: Path,
    status: str,
    reason: str,
    result: dict | None,
    *,
    leftovers: int,
    seconds: float,
) -> Outcome:
    """The Outcome of one worker run (status/reason from the parent's watch, scores from its gradebook)."""
    if status == "ok":
        if result is None:
            status, reason = "error", "grading worker exited without a result"
        elif not result.get("success"):
            status = "error"
            reason = failure_reason(result.get("log", "") + "\n" + result.get("error", ""))
    cells = source_cells(cfg, sub.lab)
    messages: dict[str, str] = {}
    answers: dict[str, str] = {}
    if status == "ok":
        for gid, got in read_grades(work / "gradebook.db", sub.lab, sub.student).items():
            if gid in cells:
                cells[gid].update(got)
        autograded = cfg.nbgrader_root / "autograded" / sub.student / sub.lab / f"{sub.lab}.ipynb"
        messages = cell_messages(autograded)
        answers = written_answers(autograded, cells)
        reason = exercise_reasons(cfg, sub.lab, cells, messages)
        if result and result.get("feedback_ok") is False:
            reason = (
                (reason + SEP if reason else "")
                + "feedback failed: "
                + failure_reason(result["feedback_log"])
            )
    elif result:
        messages["nbgrader"] = (result.get("log", "") + "\n" + result.get("error", ""))[-FULL:]
    if result and result.get("notes"):  # what the rebuild left out or found by position: grading.json only
        messages["grader_notes"] = "\n".join(result["notes"])
    if result and result.get("review") and status == "ok":
        # the tamper scan withheld points: the instructor reads the line and clears or confirms it
        status = "needs_review"
        messages["review"] = "\n".join(result["review"])
        reason = SEP.join(
            [f"needs review: {shorten(result['review'][0], 2 * SHORT)}", *filter(None, [reason])]
        )
    # (the sandbox's own kill count stays out of the reason: whether a sleeper outlives the kernel's pid
    # namespace is a race, and rows must be the same on every run)
    box = (result or {}).get("sandbox") or {}
    if leftovers and status == "ok":
        reason = (reason + SEP if reason else "") + f"killed {leftovers} leftover process(es)"
    if box.get("output_dropped_bytes") and status == "ok":
        mb = box["output_dropped_bytes"] / 2**20
        reason = (reason + SEP if reason else "") + f"output over the cap dropped ({mb:.1f} MiB)"
    timings = {k: round(float(v), 2) for k, v in (result or {}).items() if k.endswith("_s")}
    return Outcome(
        sub.student, sub.lab, status, reason, cells, seconds, leftovers, messages, timings, answers
    )


def outcome_row(cfg: CourseConfig, o: Outcome) -> dict:
    """The CSV row: student, lab, score, max_score, <exercise points...>, needs_manual, status, reason,
    seconds."""
    row: dict = {"student": o.student, "lab": o.lab}
    row["score"] = round(sum(c["score"] for c in o.cells.values()), 4)
    row["max_score"] = round(sum(c["max_score"] for c in o.cells.values()), 4)
    groups = _exercises(cfg, o.lab)
    if groups:
        for ex, gids in groups:
            row[ex] = round(sum(o.cells.get(g, {}).get("score", 0.0) for g in gids), 4)
    else:
        for gid, c in o.cells.items():
            row[gid] = c["score"]
    row["needs_manual"] = round(sum(c["max_score"] for c in o.cells.values() if c["needs_manual"]), 4)
    row["status"], row["reason"], row["seconds"] = o.status, o.reason, round(o.seconds, 1)
    return row
