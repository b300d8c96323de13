"""Hand grading, final grades, regrades and readable feedback (issue 24): a written answer graded by CSV (bad
rows refused by name, nothing written), `export` folding it into grades.csv and the student's regenerated
feedback, `grade --student` and the rerun rule (missing and error rows regraded, ok rows kept), feedback pages
that wrap long messages and name every comment, score plots with whole-student ticks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

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


def test_summary_keeps_auto_and_written_points_apart() -> None:
    """Issue 35: an exercise's hand-given points never read as more than its points: the summary names the
    auto and written maxima apart and every share is of their sum."""
    from autograder.plots import lab_figure, lab_summary

    cfg = CourseConfig(root=Path(__file__).parent / "fixtures" / "course")
    df = pd.DataFrame(
        {
            "student": ["a", "b"],
            "lab": [LAB, LAB],
            "score": [100.0, 90.0],
            "max_score": [100.0] * 2,
            "add": [30.0, 30.0],
            "square": [30.0, 30.0],
            "allsum": [30.0, 30.0],
            "explain": [10.0, 0.0],
            "status": ["ok"] * 2,
        }
    )
    _, table = lab_summary(cfg, df, LAB)
    got = table.set_index("exercise").loc["explain", ["auto points", "written points", "mean", "100%"]]
    assert got.tolist() == [0, 10, 5.0, 1], f"explain's summary {got.to_dict()}"
    shares = [bar.get_width() for bar in lab_figure(cfg, df, LAB).axes[1].patches]
    assert shares and max(shares) <= 1.0, f"shares {shares}: an exercise above its points"


@pytest.mark.parametrize("cmd", ["manual", "export"])
def test_help_has_examples_and_outputs(cmd: str, capsys) -> None:  # noqa: ANN001
    from autograder.__main__ import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args([cmd, "--help"])
    text = capsys.readouterr().out
    assert "example" in text and "outputs" in text and "gradebook" in text, text


# ---- a graded class: hand grading, export, regrades --------------------------------------------------------
pytestmark = pytest.mark.timeout(1200)  # the module fixture grades a small class (about a minute on 2 cores)
ANSWER = "all_reduce leaves the reduced sum on every participating rank."  # the reference's written answer


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> tuple[CourseConfig, Path]:
    """Its own released fixture course (the CLI's default build/ is its own) and a class of four: alice (every
    auto point, a written answer to grade), bob (the untouched release), carol (a misnamed notebook: missing),
    dan (a file that is not a notebook: error)."""
    from autograder.grade import grade
    from autograder.mutants import reference_submission, release_notebook
    from autograder.release import release

    from .conftest import FIXTURE, write_submission

    root = tmp_path_factory.mktemp("manualcourse")
    shutil.copytree(FIXTURE, root, dirs_exist_ok=True)
    cfg = CourseConfig(
        root=root, cell_timeout=45, notebook_timeout=150, kernel_env=(("FIXLAB_LAUNCH_TIMEOUT", "25"),)
    )
    release(cfg)
    subs = tmp_path_factory.mktemp("submitted")
    ref = reference_submission(cfg, LAB)
    write_submission(subs, "alice", LAB, ref)
    write_submission(subs, "bob", LAB, release_notebook(cfg, LAB))
    write_submission(subs, "carol", LAB, ref).rename(subs / "carol" / LAB / f"{LAB} (1).ipynb")
    (subs / "dan" / LAB).mkdir(parents=True)
    (subs / "dan" / LAB / f"{LAB}.ipynb").write_text("{ not a notebook")
    df = grade(cfg, subs, progress=False, seed=5, unsafe_no_sandbox=True).set_index("student")
    expected = {"alice": "ok", "bob": "ok", "carol": "missing", "dan": "error"}
    assert df["status"].to_dict() == expected, df[["status", "reason"]]
    return cfg, subs


def _gradebook_state(cfg: CourseConfig) -> dict[tuple, tuple]:
    """Every grade and comment of the course gradebook: (student, lab, cell, kind) -> its stored fields."""
    from nbgrader.api import Gradebook

    out: dict[tuple, tuple] = {}
    with Gradebook(f"sqlite:///{cfg.gradebook}") as gb:
        for a in gb.assignments:
            for sub in a.submissions:
                for nb in sub.notebooks:
                    for g in nb.grades:
                        key = (sub.student.id, a.name, g.name, "grade")
                        out[key] = (g.auto_score, g.manual_score, g.extra_credit, g.needs_manual_grade)
                    for c in nb.comments:
                        out[(sub.student.id, a.name, c.name, "comment")] = (c.auto_comment, c.manual_comment)
    return out


def _cli(cfg: CourseConfig, *args: str) -> int:
    from autograder.__main__ import main

    return main(["--root", str(cfg.root), *args])


def _stamp(cfg: CourseConfig, student: str) -> tuple[int, int]:
    """Identity of a row's grading.json: rewritten (a new file) exactly when that row is graded again."""
    st = (cfg.nbgrader_root / "feedback" / student / LAB / "grading.json").stat()
    return st.st_ino, st.st_mtime_ns


def _import_alice(cfg: CourseConfig, tmp_path: Path) -> Path:
    good = tmp_path / "good.csv"
    good.write_text(
        "student,lab,grade_id,points,comment\n"
        f"alice,{LAB},explain,7.5,Names all_reduce; says nothing of why every rank agrees\n"
        f"bob,{LAB},explain,,\n"  # no points yet: skipped
    )
    assert _cli(cfg, "manual", str(good)) == 0
    return good


def test_formgrader_config_points_at_the_course_gradebook(graded) -> None:  # noqa: ANN001
    from traitlets.config.loader import PyFileConfigLoader

    from autograder.manual import RefuseAutograde

    cfg, _ = graded
    c = PyFileConfigLoader("nbgrader_config.py", path=str(cfg.nbgrader_root)).load_config()
    assert c.CourseDirectory.root == str(cfg.nbgrader_root), c.CourseDirectory.root
    assert c.CourseDirectory.db_url == f"sqlite:///{cfg.gradebook}", c.CourseDirectory.db_url
    assert c.Autograde.autograde_preprocessors == [RefuseAutograde], c.Autograde.autograde_preprocessors
    with pytest.raises(RuntimeError, match="python -m autograder grade"):
        RefuseAutograde().preprocess(None, {})
    text = (cfg.nbgrader_root / "nbgrader_config.py").read_text()
    assert "--allow-root" in text and "/formgrader" in text, (
        "the config must say how to start formgrader as root"
    )


def test_formgrader_lists_the_graded_submissions(graded) -> None:  # noqa: ANN001
    """formgrader's front page counts a lab's submissions from its submitted folder: every graded (ok)
    submission is counted, not 0 (issue 35)."""
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    from autograder.merge import read_csv

    cfg, _ = graded
    c = PyFileConfigLoader("nbgrader_config.py", path=str(cfg.nbgrader_root)).load_config()
    api = NbGraderAPI(CourseDirectory(config=c), config=c)
    rows = read_csv(cfg.build / "grades.csv")
    ok = set(rows[rows["status"] == "ok"]["student"])
    got = api.get_submitted_students(LAB)
    assert got == ok, f"formgrader lists {sorted(got)}, expected the graded submissions {sorted(ok)}"
    assert api.get_assignment(LAB)["num_submissions"] == len(ok), api.get_assignment(LAB)


def test_template_lists_each_pending_written_answer_with_its_text(graded, tmp_path: Path) -> None:  # noqa: ANN001
    cfg, _ = graded
    out = tmp_path / "todo.csv"
    assert _cli(cfg, "manual", "--template", str(out)) == 0
    rows = pd.read_csv(out, keep_default_na=False).to_dict("records")
    # bob's answer is the untouched stub (nbgrader scores it 0, nothing to grade); carol and dan: no notebook
    assert [(r["student"], r["grade_id"], r["max_points"]) for r in rows] == [("alice", "explain", 10)], rows
    assert ANSWER in rows[0]["answer"] and rows[0]["points"] == "", rows[0]
    # the TA's mark scheme beside the answer: the rubric's criteria (and where they are), the model answer
    criteria = rows[0]["criteria"]
    assert "says the reduced value is delivered to every rank" in criteria, criteria
    assert "rubric autograder/rubric/fixlab.yaml" in criteria and "exercise explain" in criteria, criteria
    assert ANSWER in rows[0]["model_answer"], rows[0]["model_answer"]


def test_bad_rows_are_refused_by_name_and_nothing_is_written(graded, tmp_path: Path, capsys) -> None:  # noqa: ANN001
    cfg, _ = graded
    before = _gradebook_state(cfg)
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "student,lab,grade_id,points,comment\n"
        f"alice,{LAB},explain,8,fine\n"  # line 2: good, but the file is refused as a whole
        f"zed,{LAB},explain,3,\n"
        f"alice,lab99,explain,3,\n"
        f"alice,{LAB},nope,3,\n"
        f"alice,{LAB},add_tests,3,\n"
        f"bob,{LAB},explain,-1,\n"
        f"alice,{LAB},explain,11,\n"
        f"bob,{LAB},explain,seven,\n"
        f"carol,{LAB},explain,4,\n"
        f"dan,{LAB},explain,4,\n"
    )
    assert _cli(cfg, "manual", str(bad)) == 1
    err = capsys.readouterr().err
    expected = [
        "nothing written; 9 bad row(s)",
        "line 3 (zed, fixlab, explain): unknown student 'zed'",
        "line 4 (alice, lab99, explain): unknown lab 'lab99'",
        "line 5 (alice, fixlab, nope): unknown grade_id 'nope' in fixlab",
        "line 6 (alice, fixlab, add_tests): 'add_tests' is auto-graded, not a hand-graded cell",
        "line 7 (bob, fixlab, explain): points -1 < 0",
        "line 8 (alice, fixlab, explain): points 11 above the cell's maximum 10",
        "line 9 (bob, fixlab, explain): points 'seven' is not a number",
        "line 10 (carol, fixlab, explain): carol's fixlab row has status missing: no graded answer",
        "line 11 (dan, fixlab, explain): dan's fixlab row has status error: no graded answer",
    ]
    missing = [m for m in expected if m not in err]
    assert not missing, f"expected in the message: {missing}\nreceived:\n{err}"
    after = _gradebook_state(cfg)
    changed = {k: (before.get(k), v) for k, v in after.items() if before.get(k) != v}
    assert after == before, f"a refused import changed the gradebook: {changed}"


def test_export_folds_the_hand_grade_into_grades_csv_and_feedback(graded, tmp_path: Path) -> None:  # noqa: ANN001
    from autograder.merge import read_csv

    cfg, _ = graded
    csv = cfg.build / "grades.csv"
    graded_rows = read_csv(csv).set_index("student")
    assert graded_rows.loc["alice", "needs_manual"] == 10 and graded_rows.loc["alice", "score"] == 90, (
        graded_rows
    )
    before = _gradebook_state(cfg)
    _import_alice(cfg, tmp_path)
    after = _gradebook_state(cfg)
    changed = sorted(k for k in after if after[k] != before.get(k))
    expected = [("alice", LAB, "explain", "comment"), ("alice", LAB, "explain", "grade")]
    assert changed == expected, f"changed {changed}, expected only alice's written answer {expected}"
    assert after[("alice", LAB, "explain", "grade")] == (None, 7.5, None, False), after

    assert _cli(cfg, "export") == 0
    rows = read_csv(csv).set_index("student")
    got = rows.loc["alice", ["score", "explain", "needs_manual", "add", "status"]].to_dict()
    want = {"score": 97.5, "explain": 7.5, "needs_manual": 0, "add": 30, "status": "ok"}
    assert got == want, f"alice's final row {got}, expected {want}"
    others = ["bob", "carol", "dan"]
    cols = ["score", "needs_manual", "status", "reason"]
    assert rows.loc[others, cols].equals(graded_rows.loc[others, cols]), (
        graded_rows.loc[others],
        rows.loc[others],
    )

    page = (cfg.nbgrader_root / "feedback" / "alice" / LAB / f"{LAB}.html").read_text()
    assert "<h4>fixlab (Score: 97.5 / 100.0)</h4>" in page, [ln for ln in page.splitlines() if "<h4>" in ln]
    assert "(Score: 7.5 / 10.0)" in page and "says nothing of why every rank agrees" in page
    assert "pending manual grading" not in page
    notes = json.loads((cfg.nbgrader_root / "feedback" / "alice" / LAB / "grading.json").read_text())
    assert (notes["row"]["score"], notes["cells"]["explain"]["score"]) == (97.5, 7.5), (
        f"export left grading.json at {notes['row']['score']} (explain {notes['cells']['explain']}), "
        "expected 97.5 (explain 7.5)"
    )
    summary = (cfg.build / "grades.summary.md").read_text()
    line = next(ln for ln in summary.splitlines() if ln.startswith("| explain"))
    assert line.startswith("| explain | 0 | 10 | "), f"explain's summary line {line!r}: 0 auto, 10 written"

    first = csv.read_bytes()
    assert _cli(cfg, "export", "--no-feedback") == 0
    assert csv.read_bytes() == first, "a second export changed grades.csv"


def test_grade_student_regrades_only_that_student_and_keeps_hand_grades(graded, tmp_path: Path) -> None:  # noqa: ANN001
    from autograder.__main__ import build_parser
    from autograder.grade import grade

    cfg, subs = graded
    args = build_parser().parse_args(["grade", str(subs), "--student", "alice", "--student", "bob"])
    assert args.student == ["alice", "bob"], args.student
    with pytest.raises(ValueError, match="--student zed: no such student folder"):
        grade(cfg, subs, students=["zed"], progress=False, unsafe_no_sandbox=True)

    _import_alice(cfg, tmp_path)
    stamps = {s: _stamp(cfg, s) for s in ("alice", "bob", "carol", "dan")}
    df = grade(cfg, subs, students=["alice"], progress=False, unsafe_no_sandbox=True)
    assert list(df["student"]) == ["alice"] and list(df["status"]) == ["ok"], df
    again = {s: _stamp(cfg, s) != stamps[s] for s in stamps}
    assert again == {"alice": True, "bob": False, "carol": False, "dan": False}, f"regraded: {again}"
    # the hand-given score survives the regrade of the same answer, still graded (issue 35)
    auto, manual, _, review = _gradebook_state(cfg)[("alice", LAB, "explain", "grade")]
    assert (manual, review) == (7.5, False), (
        f"alice's explain after regrade: manual {manual}, review {review}"
    )
    assert (df.loc[0, "score"], df.loc[0, "needs_manual"]) == (97.5, 0), df


def test_rerun_regrades_missing_and_error_rows_and_keeps_ok_rows(graded) -> None:  # noqa: ANN001
    import nbformat

    from autograder.grade import grade
    from autograder.merge import read_csv
    from autograder.mutants import reference_submission

    cfg, subs = graded
    before = read_csv(cfg.build / "grades.csv").set_index("student")
    stamps = {s: _stamp(cfg, s) for s in ("alice", "bob", "carol", "dan")}
    (subs / "carol" / LAB / f"{LAB} (1).ipynb").rename(subs / "carol" / LAB / f"{LAB}.ipynb")  # renamed
    nbformat.write(reference_submission(cfg, LAB), subs / "dan" / LAB / f"{LAB}.ipynb")  # a fixed file
    grade(cfg, subs, progress=False, unsafe_no_sandbox=True)
    after = read_csv(cfg.build / "grades.csv").set_index("student")
    again = {s: _stamp(cfg, s) != stamps[s] for s in stamps}
    assert again == {"alice": False, "bob": False, "carol": True, "dan": True}, f"regraded: {again}"
    assert after.loc[["carol", "dan"], "status"].tolist() == ["ok", "ok"], after[["status", "reason"]]
    assert after.loc[["carol", "dan"], "score"].tolist() == [90, 90], after[["score", "reason"]]
    kept = ["alice", "bob"]
    assert after.loc[kept].equals(before.loc[kept]), (before.loc[kept], after.loc[kept])


def test_hand_points_survive_every_regrade_order(graded, tmp_path: Path) -> None:  # noqa: ANN001
    """Issue 35: a hand-given score holds, in grades.csv and the gradebook, through every order of export,
    grade --student, a plain rerun, --clear-review, --force and merge; only a changed written answer puts it
    back in the to-grade list (its previous points shown), and the next import + export settles it."""
    import nbformat

    from autograder.grade import grade
    from autograder.merge import read_csv

    cfg, subs = graded
    csv = cfg.build / "grades.csv"

    def alice() -> tuple:
        row = read_csv(csv).set_index("student").loc["alice"]
        _, manual, _, review = _gradebook_state(cfg)[("alice", LAB, "explain", "grade")]
        return (float(row["score"]), float(row["explain"]), float(row["needs_manual"]), manual, review)

    def regrade(**kw) -> None:  # noqa: ANN003
        grade(cfg, subs, progress=False, unsafe_no_sandbox=True, **kw)

    def merge_stale_shard() -> int:
        """A shard graded from a gradebook copy older than the hand grading: its row lacks the points."""
        shard = tmp_path / "shards" / "0-of-1"
        shard.mkdir(parents=True, exist_ok=True)
        rows = read_csv(csv)
        at = rows["student"] == "alice"
        rows.loc[at, ["score", "explain", "needs_manual"]] = [90.0, 0.0, 10.0]
        rows.to_csv(shard / "grades.csv", index=False)
        shutil.copy2(csv.with_name("grades.run.json"), shard / "grades.run.json")
        shutil.copy2(cfg.gradebook, shard / "gradebook.db")
        return _cli(cfg, "merge", str(shard))

    _import_alice(cfg, tmp_path)
    final = (97.5, 7.5, 0.0, 7.5, False)  # score, explain, needs_manual, gradebook manual score, flagged
    steps = [
        ("export", lambda: _cli(cfg, "export", "--no-feedback")),
        ("grade --student alice", lambda: regrade(students=["alice"])),
        ("grade (rerun: alice kept)", lambda: regrade()),
        ("export", lambda: _cli(cfg, "export", "--no-feedback")),
        ("grade --clear-review alice", lambda: regrade(students=["alice"], cleared=("alice",))),
        ("grade --force", lambda: regrade(force=True)),
        ("merge of a shard that predates the hand grading", merge_stale_shard),
        ("export", lambda: _cli(cfg, "export", "--no-feedback")),
    ]
    done = ["manual import"]
    for name, step in steps:
        step()
        done.append(name)
        assert alice() == final, f"after {' -> '.join(done)}: alice {alice()}, expected {final}"

    # a changed written answer: its old points are kept but no longer count; the template shows them
    path = subs / "alice" / LAB / f"{LAB}.ipynb"
    nb = nbformat.read(path, as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "explain")
    cell.source += "\n\nEdited after the deadline: a longer answer."
    nbformat.write(nb, path)
    regrade(students=["alice"])
    changed = (90.0, 0.0, 10.0, 7.5, True)
    assert alice() == changed, f"after alice's answer changed: {alice()}, expected {changed}"
    todo = tmp_path / "todo.csv"
    assert _cli(cfg, "manual", "--template", str(todo)) == 0
    rows = pd.read_csv(todo, keep_default_na=False).to_dict("records")
    got = [(r["grade_id"], str(r["points"])) for r in rows if r["student"] == "alice"]
    assert got == [("explain", "7.5")], f"alice's to grade again: {got}, expected her explain at 7.5"
    assert "Edited after the deadline" in rows[0]["answer"], rows[0]["answer"]
    assert _cli(cfg, "export", "--no-feedback") == 0
    assert alice() == changed, f"export counted a changed answer's old points: {alice()}"
    todo.write_text(f"student,lab,grade_id,points,comment\nalice,{LAB},explain,9,\n")
    assert _cli(cfg, "manual", str(todo)) == 0 and _cli(cfg, "export", "--no-feedback") == 0
    assert alice() == (99.0, 9.0, 0.0, 9.0, False), f"after grading the new answer: {alice()}"
