"""Hand grading, final grades, regrades and readable feedback (issue 24): a written answer graded by CSV (bad
rows refused by name, nothing written), `export` folding it into grades.csv and the student's regenerated
feedback, `grade --student` and the rerun rule (missing and error rows regraded, ok rows kept), feedback pages
that wrap long messages and name every comment, score plots with whole-student ticks."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from autograder.config import CourseConfig
from autograder.feedback import WRAP_MARK, annotate_feedback

LAB = "fixlab"


# ---- feedback page and plots (no grading) ------------------------------------------------------------------
PAGE = """<html><head><style>pre { overflow: auto }</style></head><body>
<h4>lab (Score: 30.0 / 40.0)</h4>
<li><a href="#comment-s1">Comment</a></li>
<li><a href="#t1">Test cell</a> (Score: 30.0 / 30.0)</li>
<li><a href="#w1">Written response</a> (Score: 0.0 / 10.0)</li>
<li><a href="#comment-w1">Comment</a></li>
<a name="comment-s1"></a><div class="panel-footer"><div><b>Comments:</b> <p>No response.</p></div></div>
<a name="comment-w1"></a><a name="w1"></a><div><span class="pull-right">Score: 0.0 / 10.0</span>
<div class="panel-footer"><div><b>Comments:</b> <p>Names <em>all_reduce</em>; misses why</p></div></div>
</body></html>"""


def test_feedback_wraps_long_messages_and_names_every_comment(tmp_path: Path) -> None:
    page = tmp_path / "f.html"
    page.write_text(PAGE)
    titles = {"s1": "Ring", "t1": "Ring", "w1": "Card"}
    annotate_feedback(page, titles, set())
    annotate_feedback(page, titles, set())  # a second pass adds nothing
    text = page.read_text()
    assert text.count(f'id="{WRAP_MARK}"') == 1, text.count(WRAP_MARK)
    style = text[text.index(f'id="{WRAP_MARK}"') :]
    assert "white-space: pre-wrap" in style and "word-break: break-word" in style, style[:200]
    assert text.index(WRAP_MARK) < text.index("</head>"), "the wrap style must be in the page's head"
    assert ">Comment</a>" not in text, [ln for ln in text.splitlines() if "Comment" in ln]
    assert '<a href="#comment-s1">Comment on Ring <code>s1</code></a>: No response.' in text, text
    assert '<a href="#comment-w1">Comment on Card <code>w1</code></a>: Names all_reduce; misses why' in text


def test_lab_plot_counts_students_in_whole_numbers() -> None:
    from autograder.plots import lab_figure

    cfg = CourseConfig(root=Path(__file__).parent / "fixtures" / "course")
    df = pd.DataFrame(
        {
            "student": ["a", "b"],
            "lab": [LAB, LAB],
            "score": [90.0, 105.0],
            "max_score": [100.0] * 2,
            "status": ["ok"] * 2,
        }
    )
    fig = lab_figure(cfg, df, LAB)
    ticks = list(fig.axes[0].get_yticks())
    assert ticks and all(float(t).is_integer() for t in ticks), (
        f"student ticks {ticks}: expected whole numbers"
    )
    hist = fig.axes[0].patches
    counted = sum(p.get_height() for p in hist)
    assert counted == 2, (
        f"{counted} students in the histogram, expected 2 (105 points: extra credit above 100)"
    )
