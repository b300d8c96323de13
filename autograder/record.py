"""The verdict record (issue 32 item 5): what grading decided about one submission, typed, decided once.

``JudgeEvidence`` (the one place a graded cell is decided, in the worker after execution) builds a
:class:`Record` and writes it to one JSON file; the worker puts it into its result unchanged; the parent turns
it into the row (:func:`autograder.outcome.outcome_from_result`), and from that row come ``grades.csv``,
``grading.json``, the course gradebook and the feedback's scores (:func:`sync_gradebook` writes the record's
points into the submission's gradebook before nbgrader renders the feedback). Nothing downstream re-reads a
score from a gradebook or a message from the executed notebook.

    rec = Record.read(path)
    rec.cells["sampler_tests"].score, rec.cells["sampler_tests"].why
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

FULL = 4000  # characters of one cell's messages kept (grading.json shows them in full up to this)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@dataclass(frozen=True)
class CellRecord:
    """One graded cell's verdict."""

    grade_id: str
    kind: str  # "auto" (a test cell, decided by autograder.verdict.cell_verdict) | "manual" (a hand grade)
    max_score: float
    # auto: max_score or 0 (verdicts are binary); manual: 0 for an untouched answer, None while it waits for a
    # hand grade (nbgrader's rule, nbgrader.utils.determine_grade)
    score: float | None
    why: str = ""  # the first reason it failed, one line ('' when it passed or is manual)
    messages: str = ""  # every message of the cell in full: its own errors, then the judge's problems
    checks: int = 0  # how many judge checks the reference recorded for it (the evidence summary)
    answer: str = ""  # manual: digest of the written answer as graded (:func:`answer_digest`)

    @property
    def needs_manual(self) -> bool:
        return self.kind == "manual" and self.score is None


@dataclass
class Record:
    """Every graded cell of one submission, plus what the sandbox had to do while it ran."""

    cells: dict[str, CellRecord] = field(default_factory=dict)  # in notebook order
    # leftovers_killed, wall_expired, output_dropped_bytes (autograder.execute.SandboxedExecute)
    sandbox: dict[str, Any] = field(default_factory=dict)
    exec_s: float = 0.0  # seconds the kernels spent executing cells (nbclient's per-cell timing metadata)

    def to_json(self) -> dict:
        return {"cells": [asdict(c) for c in self.cells.values()], "sandbox": dict(self.sandbox),
                "exec_s": self.exec_s}

    @classmethod
    def from_json(cls, data: dict) -> Record:
        cells = [CellRecord(**c) for c in data.get("cells", [])]
        sandbox = dict(data.get("sandbox") or {})
        return cls({c.grade_id: c for c in cells}, sandbox, float(data.get("exec_s", 0)))

    def write(self, path: Path) -> None:
        """Atomically: a reader never sees half a record."""
        tmp = Path(str(path) + ".tmp")
        tmp.write_text(json.dumps(self.to_json()))
        tmp.replace(path)

    @classmethod
    def read(cls, path: Path) -> Record | None:
        return cls.from_json(json.loads(Path(path).read_text())) if Path(path).exists() else None


def cell_errors(cell: Any) -> str:
    """Every error output of an executed cell as 'Name: message' lines (ANSI colours removed, once each)."""
    texts = [
        f"{o.get('ename')}: {_ANSI.sub('', str(o.get('evalue') or '')).strip()}"
        for o in cell.get("outputs", [])
        if o.get("output_type") == "error"
    ]
    return "\n".join(dict.fromkeys(texts))


def auto_cell(grade_id: str, max_score: float, failure: str, errors: str, problems: list[str],
              checks: int) -> CellRecord:
    """A test cell's record from its own failure (autograder.verdict.cell_failure), its error outputs and the
    judge's problems: it passes when neither has anything to say."""
    from autograder.verdict import one_line

    passed = not failure and not problems
    full = "\n".join(filter(None, [errors or failure, *problems]))[:FULL]
    why = "" if passed else one_line(failure or "; ".join(problems))
    return CellRecord(grade_id, "auto", max_score, max_score if passed else 0.0, why, full, checks)


def exec_seconds(nb: Any) -> float:
    """Seconds the kernel spent executing ``nb``'s cells (nbclient's per-cell timing metadata; 0 unknown)."""
    from dateutil.parser import isoparse

    total = 0.0
    for cell in nb.cells:
        t = cell.get("metadata", {}).get("execution", {})
        a, b = t.get("iopub.execute_input"), t.get("shell.execute_reply")
        if a and b:
            total += (isoparse(b) - isoparse(a)).total_seconds()
    return total


def answer_digest(text: str) -> str:
    """A written answer's identity across regrades (whitespace at the ends and line endings ignored)."""
    import hashlib

    norm = "\n".join(line.rstrip() for line in text.strip().splitlines())
    return hashlib.sha256(norm.encode()).hexdigest()[:16]


def manual_cell(cell: Any) -> CellRecord:
    """A hand-graded cell's record: 0 for an untouched answer, else waiting (nbgrader's own rule)."""
    from nbgrader.utils import determine_grade

    meta = cell.metadata["nbgrader"]
    score, max_score = determine_grade(cell)
    return CellRecord(meta["grade_id"], "manual", float(max_score), None if score is None else float(score),
                      answer=answer_digest(cell.source))


def sync_gradebook(db: Path, lab: str, student: str, record: Record) -> None:
    """Write the record's auto points into ``db`` (the submission's nbgrader gradebook), so the feedback
    nbgrader renders from it shows exactly the record's scores."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(f"sqlite:///{db}") as gb:
        for c in record.cells.values():
            if c.kind != "auto":
                continue
            try:
                g = gb.find_grade(c.grade_id, lab, lab, student)
            except MissingEntry:
                continue
            g.auto_score = c.score
        gb.db.commit()
