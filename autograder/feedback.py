"""Feedback HTML for students: nbgrader's GenerateFeedback page, annotated so an instructor can hand it out.

Used by the grading worker (right after autograding) and by ``python -m autograder export`` (after hand
grading, to regenerate the page with the final score).
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from autograder.config import CourseConfig


def pending_manual(db: Path, lab: str, student: str) -> set[str]:
    """grade_ids of ``student``'s ``lab`` cells in gradebook ``db`` that still wait for a hand-given score."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{db}") as gb:
        nb = gb.find_submission_notebook(lab, lab, student)
        return {g.name for g in nb.grades if g.needs_manual_grade}


_pending_manual = pending_manual  # the grading worker's name for it


_TOC_ITEM = re.compile(
    r'<li><a href="#(?P<gid>[^"]+)">(?P<label>[^<]*)</a> \(Score: (?P<s>[\d.]+) / (?P<m>[\d.]+)\)</li>'
)
# nbgrader lists every non-empty comment as a bare "Comment" link (its auto comment "No response." on each
# untouched answer, too): the entry says whose comment it is and what it says instead
_TOC_COMMENT = re.compile(r'<li><a href="#comment-(?P<gid>[^"]+)">Comment</a></li>')
_COMMENT_TEXT = r'<a name="comment-{gid}"></a>.*?<b>Comments:</b>(?P<body>.*?)</div>'
COMMENT_PREVIEW = 80  # characters of a comment quoted in the table of contents
# Judge and assert messages are long single lines: nbgrader's page keeps <pre> unwrapped, so they ran off the
# page edge. One marked style block (the marker keeps a second annotation from adding another).
WRAP_MARK = "course-feedback-wrap"
WRAP_CSS = (
    f'<style id="{WRAP_MARK}">\n'
    "pre, div.output_area pre, div.output_subarea pre {\n"
    "  white-space: pre-wrap !important; word-break: break-word; overflow-wrap: anywhere;\n"
    "}\n"
    "</style>\n"
)


def exercise_titles(cfg: CourseConfig, lab: str) -> dict[str, str]:
    """grade_id -> the rubric exercise's title, for every graded and every solution cell of ``lab``."""
    from autograder.rubrics import load_rubric

    path = cfg.rubric / f"{lab}.yaml"
    if not path.exists():
        return {}
    out: dict[str, str] = {}
    for ex in load_rubric(path).exercises:
        for gid in [*ex.solution_cells, *(c.grade_id for c in ex.graded_cells)]:
            out[gid] = ex.title or ex.id
    return out


def _comment_preview(text: str, gid: str) -> str:
    m = re.search(_COMMENT_TEXT.format(gid=re.escape(gid)), text, flags=re.S)
    if not m:
        return ""
    plain = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", m.group("body"))).split())
    plain = re.sub(r" ([,.;:!?])", r"\1", plain)  # "<em>x</em>;" became "x ;"
    if len(plain) > COMMENT_PREVIEW:
        plain = plain[: COMMENT_PREVIEW - 1].rstrip() + "…"
    return plain


def annotate_feedback(path: Path, titles: dict[str, str], pending: set[str]) -> None:
    """Feedback HTML an instructor can hand out: the table of contents names each cell's exercise (and whose
    comment each comment entry is), an unmarked written answer says "pending manual grading" instead of a
    score of 0, and long messages wrap at the page edge."""
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

    def comment(m: re.Match) -> str:
        gid = m.group("gid")
        whose = f"<code>{html.escape(gid)}</code>"
        if titles.get(gid):
            whose = f"{html.escape(titles[gid])} {whose}"
        said = _comment_preview(text, gid)
        said = f": {html.escape(said)}" if said else ""
        return f'<li><a href="#comment-{gid}">Comment on {whose}</a>{said}</li>'

    text = _TOC_ITEM.sub(toc, text)
    text = _TOC_COMMENT.sub(comment, text)
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
    if WRAP_MARK not in text:  # after nbgrader's own styles, so it wins over their pre rules
        head_end = text.find("</head>")
        text = text[:head_end] + WRAP_CSS + text[head_end:] if head_end >= 0 else WRAP_CSS + text
    path.write_text(text, encoding="utf-8")
