"""Feedback HTML for students: nbgrader's GenerateFeedback page, annotated so an instructor can hand it out.

Used by the grading worker (right after autograding) and by ``python -m autograder export`` (after hand
grading, to regenerate the page with the final score).
"""

from __future__ import annotations

import html
import re
from pathlib import Path


def _pending_manual(db: Path, lab: str, student: str) -> set[str]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{db}") as gb:
        nb = gb.find_submission_notebook(lab, lab, student)
        return {g.name for g in nb.grades if g.needs_manual_grade}


_TOC_ITEM = re.compile(
    r'<li><a href="#(?P<gid>[^"]+)">(?P<label>[^<]*)</a> \(Score: (?P<s>[\d.]+) / (?P<m>[\d.]+)\)</li>'
)


def annotate_feedback(path: Path, titles: dict[str, str], pending: set[str]) -> None:
    """Feedback HTML an instructor can hand out: the table of contents names each cell's exercise, and an
    unmarked written answer says "pending manual grading" instead of a score of 0."""
    text = path.read_text(encoding="utf-8")

    def toc(m: re.Match) -> str:
        gid = m.group("gid")
        label = f"{m.group('label')} <code>{html.escape(gid)}</code>"
        if titles.get(gid):
            label = f"{html.escape(titles[gid])} &mdash; {label}"
        score = (
            f"pending manual grading, {float(m.group('m')):g} points"
            if gid in pending
            else f"Score: {m.group('s')} / {m.group('m')}"
        )
        return f'<li><a href="#{gid}">{label}</a> ({score})</li>'

    text = _TOC_ITEM.sub(toc, text)
    for gid in pending:  # the cell's own heading: 'Score: 0.0 / 4.0' -> 'pending manual grading (4 points)'
        text = re.sub(
            rf'(<a name="{re.escape(gid)}"></a>.*?)Score: [\d.]+ / ([\d.]+)',
            lambda m: f"{m.group(1)}pending manual grading ({float(m.group(2)):g} points)",
            text,
            count=1,
            flags=re.S,
        )
    if pending:
        text = re.sub(
            r"(<h4>.*?\(Score: [\d.]+ / [\d.]+)\)</h4>",
            lambda m: f"{m.group(1)}; {len(pending)} written answer(s) pending manual grading)</h4>",
            text,
            count=1,
            flags=re.S,
        )
    path.write_text(text, encoding="utf-8")
