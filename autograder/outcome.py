"""From a worker's result to what the instructor reads: per-cell scores, one short reason per failing exercise
(the CSV's ``reason``), and every message in full (``grading.json`` beside the feedback)."""

from __future__ import annotations

from dataclasses import dataclass, field

from autograder.config import CourseConfig
from autograder.record import FULL, Record

SHORT = 110  # characters of one exercise's reason in the CSV
SEP = " | "  # between exercises in the CSV's reason (messages themselves often hold "; ")


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


def _status(sub, status: str, reason: str, result: dict | None,  # noqa: ANN001 - shard.Submission
            record: Record | None) -> tuple[str, str]:
    """The row's status and the reason before the exercises' own: the one place that decides it.

    ``sub``: a submission the shard could not use is ``missing`` (nothing handed in where expected) or
    ``error`` (refused: links, devices; a rerun grades it again once it is plain files). ``status``/``reason``
    come from the parent's watch of the worker (ok | timeout | error, with why); ``result`` is the worker's;
    ``record`` the verdict record it carried (None when nothing was graded)."""
    if not getattr(sub, "gradable", True):
        from autograder.shard import REFUSED

        return ("error" if sub.problem.startswith(REFUSED) else "missing"), sub.problem
    if status != "ok":
        return status, reason
    if result is None:
        return "error", "grading worker exited without a result"
    if not result.get("success") or record is None:
        return "error", failure_reason(result.get("log", "") + "\n" + result.get("error", ""))
    if result.get("review"):  # the tamper scan withheld points (no process boundary): a reader decides
        return "needs_review", f"needs review: {shorten(result['review'][0], 2 * SHORT)}"
    return "ok", ""


def outcome_from_result(
    cfg: CourseConfig,
    sub,  # noqa: ANN001 - shard.Submission
    status: str,
    reason: str,
    result: dict | None,
    *,
    leftovers: int = 0,
    seconds: float = 0.0,
) -> Outcome:
    """The Outcome of one worker run: the status from :func:`_status`, every cell from the verdict record the
    worker carried (:mod:`autograder.record`; scores, messages and answer digests, decided once)."""
    record = Record.from_json(result["record"]) if result and result.get("record") else None
    status, head = _status(sub, status, reason, result, record)
    cells = source_cells(cfg, sub.lab)
    messages: dict[str, str] = {}
    answers: dict[str, str] = {}
    reasons = [head] if head and status != "ok" else []
    if record is not None and status in ("ok", "needs_review"):
        for gid, c in record.cells.items():
            if gid in cells:
                cells[gid].update(score=c.score or 0.0, needs_manual=c.needs_manual)
            if c.messages:
                messages[gid] = c.messages
            if c.kind == "manual":
                answers[gid] = c.answer
        reasons.append(exercise_reasons(cfg, sub.lab, cells, messages))
        if result.get("feedback_ok") is False:
            reasons.append("feedback failed: " + failure_reason(result["feedback_log"]))
    elif result and status == "error":
        messages["nbgrader"] = (result.get("log", "") + "\n" + result.get("error", ""))[-FULL:]
    if result and result.get("notes"):  # what the rebuild left out or found by position: grading.json only
        messages["grader_notes"] = "\n".join(result["notes"])
    if result and result.get("review") and status == "needs_review":
        messages["review"] = "\n".join(result["review"])
    # (the sandbox's own kill count stays out of the reason: whether a sleeper outlives the kernel's pid
    # namespace is a race, and rows must be the same on every run)
    box = record.sandbox if record is not None else {}
    if leftovers and status == "ok":
        reasons.append(f"killed {leftovers} leftover process(es)")
    if box.get("output_dropped_bytes") and status == "ok":
        reasons.append(f"output over the cap dropped ({box['output_dropped_bytes'] / 2**20:.1f} MiB)")
    timings = {k: round(float(v), 2) for k, v in (result or {}).items() if k.endswith("_s")}
    return Outcome(sub.student, sub.lab, status, SEP.join(filter(None, reasons)), cells, seconds, leftovers,
                   messages, timings, answers)


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
