"""The one rule that decides a graded test cell, for every path that grades: nbgrader's autograde of a
submission, the mutant check, and the reference run.

A test cell passes when it ran without an error (or, with ``stderr_fails``, without writing to stderr) AND
the trusted judge passes every key the reference recorded for it (:func:`autograder.judge.judge_cell`)::

    v = cell_verdict("sampler_tests", failure=cell_failure(cell, stderr_fails=False),
                     reference=ref_records, student=stu_records)
    v.passed, v.why, v.problems

Also the shapes every path shares: which cells are auto-graded tests, and a test cell's visible and hidden
parts (the mutant check and the reference run execute them apart to learn what the visible part alone
catches).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from autograder.judge import judge_cell

HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
MAX_WHY = 240  # characters of one verdict's reason: an assertion message can print whole tensors


def is_auto_test(cell: Any) -> bool:
    """True for an auto-graded test cell: a code cell with nbgrader ``grade`` and no ``solution``."""
    meta = (cell.get("metadata", {}) or {}).get("nbgrader", {}) or {}
    return cell.get("cell_type") == "code" and bool(meta.get("grade")) and not meta.get("solution")


def split_test(source: str) -> tuple[str, str]:
    """(visible part, hidden part) of a test cell's source; the hidden part starts at its BEGIN marker."""
    lines = source.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == HIDDEN_BEGIN:
            return "\n".join(lines[:i]), "\n".join(lines[i:])
    return source, ""


def one_line(text: str, limit: int = MAX_WHY) -> str:
    """``text`` on one line, at most ``limit`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def cell_failure(cell: Any, stderr_fails: bool = False) -> str:
    """Why an executed cell failed, from its outputs ('' if it did not): its first error, or its stderr when
    the course counts stderr as a failure."""
    for o in cell.get("outputs", []):
        if o.get("output_type") == "error":
            return one_line(f"{o.get('ename', 'error')}: {o.get('evalue', '')}")
        if stderr_fails and o.get("output_type") == "stream" and o.get("name") == "stderr":
            return one_line(f"wrote to stderr: {o.get('text', '')}")
    return ""


@dataclass(frozen=True)
class Verdict:
    grade_id: str
    passed: bool
    why: str = ""  # the first reason it failed: the cell's own error, else the judge's problems
    problems: list[str] = field(default_factory=list)  # the judge's problems alone


def cell_verdict(grade_id: str, failure: str, reference: Any, student: Any) -> Verdict:
    """The verdict of one test cell: ``failure`` (from :func:`cell_failure` or a runner's own reason: a
    timeout, a dead kernel) and the judge on its evidence (``reference`` / ``student``: that cell's records as
    :func:`autograder.judge.load_evidence` returns them)."""
    problems = judge_cell(grade_id, reference, student)
    why = failure or "; ".join(problems)
    return Verdict(grade_id, not failure and not problems, one_line(why) if why else "", problems)
