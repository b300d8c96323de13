"""Fast checks of the pipeline's pieces on the fixture course: config validation, source regions, rubric
agreement (both ways), mutant headers, release stubs, and the exercise-level mutant checker."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import nbformat
import pytest

from autograder.config import CourseConfig
from autograder.merge import write_csv
from autograder.mutant_check import check_lab_mutants
from autograder.mutants import Mutant, find_mutants, parse_mutant
from autograder.outcome import failure_reason, shorten
from autograder.rubrics import load_rubric, rubric_problems
from autograder.source import (
    graded_cells,
    hidden_lines,
    public_lines,
    read_source,
    solution_cells,
    solution_lines,
)
from autograder.worker import annotate_feedback, describe_exit

from .conftest import FIXTURE

SRC = FIXTURE / "solutions" / "fixlab" / "fixlab.py"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"workers": 0}, "workers must be a positive integer, got 0"),
        ({"cell_timeout": -1}, "cell_timeout must be a positive number of seconds, got -1"),
        (
            {"cell_timeout": 100, "notebook_timeout": 50},
            r"notebook_timeout \(50\) must be >= cell_timeout \(100\)",
        ),
    ],
)
def test_config_rejects_bad_limits(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        CourseConfig(**kwargs)


def test_config_finds_labs_and_env(tmp_path: Path) -> None:
    cfg = CourseConfig(root=FIXTURE, fast=True, kernel_env=(("X", "1"),))
    assert cfg.lab_ids() == ["fixlab"]
    want = {"COURSE_FAST": "1", "COURSE_CELL_TIMEOUT_S": str(int(cfg.cell_timeout)), "X": "1"}
    assert cfg.kernel_environ() == want, (cfg.kernel_environ(), want)
    assert CourseConfig(root=tmp_path).lab_ids() == []


def test_source_regions() -> None:
    nb = read_source(SRC)
    assert "total_of_both = a + b" in solution_lines(nb)
    assert "ev = Evidence(\"add_tests\")" in hidden_lines(nb)
    assert "assert add(1, 2) == 3, f\"add(1, 2): got {add(1, 2)!r}, expected 3\"" in public_lines(nb)
    assert not solution_lines(nb) & public_lines(nb)
    assert [c.id for c in nb.cells][:3] == ["cell-000", "cell-001", "cell-002"]
    assert all(set(c.metadata) <= {"nbgrader"} for c in nb.cells)
    assert read_source(SRC) == nb  # stable ids: deterministic


def test_rubric_agrees_with_fixture_and_reports_both_ways() -> None:
    nb = read_source(SRC)
    rubric = load_rubric(FIXTURE / "autograder" / "rubric" / "fixlab.yaml")
    assert rubric_problems(rubric, graded_cells(nb), set(solution_cells(nb))) == []
    cells = graded_cells(nb)
    cells["square_tests"] = {**cells["square_tests"], "points": 25}
    cells["bonus_tests"] = {"points": 5, "kind": "auto", "cell_type": "code"}
    del cells["add_tests"]
    problems = "\n".join(rubric_problems(rubric, cells, set(solution_cells(nb)) | {"extra_solution"}))
    assert "square_tests: rubric says 30.0 points, notebook metadata says 25" in problems
    assert "notebook graded cell 'bonus_tests'" in problems
    assert "rubric cell 'add_tests' is not a graded cell" in problems
    assert "'extra_solution' belongs to no rubric exercise" in problems
    bad = dataclasses.replace(rubric, total=90)
    assert "rubric total is 90" in "\n".join(rubric_problems(bad, graded_cells(nb), set(solution_cells(nb))))


def test_mutant_header_parsing(tmp_path: Path) -> None:
    m = find_mutants(CourseConfig(root=FIXTURE), "fixlab")[0]
    assert (m.name, m.exercise, m.replaces) == ("square_plus", "square", "square_solution")
    assert m.source.startswith("def square(x):") and not m.is_file_mutant
    p = tmp_path / "bad.py"
    p.write_text("# mutant: bad\n# exercise: square\ndef f(): pass\n")
    with pytest.raises(ValueError, match=r"lacks \['replaces', 'why'\]"):
        parse_mutant(p, "fixlab", {})


def test_failure_reasons() -> None:
    assert "kernel died" in failure_reason("... nbclient.exceptions.DeadKernelError: Kernel died\n")
    assert "exists multiple times" in failure_reason("[WARNING] Cell with id 'x' exists multiple times!\n")
    assert failure_reason("") == "nbgrader failed without a message"


def test_csv_merge_replaces_rows_and_keeps_others(tmp_path: Path) -> None:
    out = tmp_path / "g.csv"
    row = {
        "student": "a",
        "lab": "l",
        "score": 1,
        "max_score": 2,
        "ex": 1,
        "needs_manual": 0,
        "status": "ok",
        "reason": "",
        "seconds": 1,
    }
    write_csv([row, {**row, "student": "b"}], out)
    df = write_csv([{**row, "score": 2}], out)
    assert list(df["student"]) == ["a", "b"] and list(df["score"]) == [2, 1]


@pytest.mark.slow
def test_mutant_checker_catches_weak_tests_collateral_damage_and_dead_kernels(fixlab_course) -> None:  # noqa: ANN001
    cfg = fixlab_course
    good = find_mutants(cfg, "fixlab")[0]
    base = {"lab": "fixlab", "why": "test", "path": Path("x.py")}
    harmless = Mutant(
        name="harmless",
        exercise="square",
        replaces="square_solution",
        source="def square(x):\n    return x ** 2\n",
        **base,
    )
    collateral = Mutant(
        name="collateral",
        exercise="square",
        replaces="square_solution",
        source="def square(x):\n    return x + x\ncourse_dist.launch = None\n",
        **base,
    )
    crash = Mutant(
        name="crash", exercise="add", replaces="add_solution", source="import os\nos._exit(1)\n", **base
    )
    sneaky = Mutant(  # right on the visible cases only
        name="sneaky",
        exercise="square",
        replaces="square_solution",
        source="def square(x):\n    return x * x if x in (3, -4) else 0\n",
        **base,
    )
    excused = dataclasses.replace(sneaky, name="excused", hidden_only="only the visible cases are easy")
    # collateral last: it poisons course_dist.launch for every mutant after it in the same kernel
    res = check_lab_mutants(cfg, "fixlab", [good, harmless, crash, sneaky, excused, collateral])
    assert res["square_plus"] == [], res
    assert res["excused"] == [], res
    assert any("visible tests of square all PASS" in p for p in res["sneaky"]), res
    # the walk's reference cells after `collateral` run with its poisoned launch: only allsum may suffer
    assert all("allsum_tests" in p for p in res.get("<reference>", [])), res
    assert any("square_tests PASSED" in p for p in res["harmless"]), res
    # each failure says why: the part that failed and its exception (here: launch is None now)
    assert any(
        "allsum_tests of another exercise FAILED" in p and "TypeError" in p for p in res["collateral"]
    ), res
    # a mutant that kills the kernel would zero the whole submission under nbgrader: flagged; the kernel was
    # restarted and the mutants after it (square_*) were still checked (above)
    assert any("square_tests of another exercise FAILED" in p for p in res["crash"]), res
    assert any("square_tests" in p and "the kernel died" in p for p in res["crash"]), res


@pytest.mark.slow
def test_mutant_checker_without_next_exercise_stops_mutants_not_valid_variants(fixlab_course) -> None:  # noqa: ANN001
    """``next_exercise=False`` (make test): a cell mutant runs through its own exercise only, so its damage to
    the next one goes unseen (make course's check); a valid variant still runs through the next exercise."""
    cfg = fixlab_course
    base = {"lab": "fixlab", "exercise": "square", "replaces": "square_solution", "why": "test",
            "path": Path("x.py")}
    poison = "course_dist.launch = None\n"
    collateral = Mutant(name="collateral", source="def square(x):\n    return x + x\n" + poison, **base)
    valid = Mutant(name="valid_poison", source="def square(x):\n    return x * x\n" + poison, valid=True,
                   **base)
    # the valid variant first: its own poison, not the mutant's, is what allsum must meet
    res = check_lab_mutants(cfg, "fixlab", [valid, collateral], next_exercise=False)
    assert res["collateral"] == [], f"stopped after square, so only its own loss counts: {res}"
    assert any("allsum_tests" in p and "TypeError" in p for p in res["valid_poison"]), \
        f"a valid variant must still run through allsum and lose it there: {res}"


@pytest.mark.slow
def test_mutant_checker_runs_next_exercise_hidden_parts_only_when_asked(fixlab_course) -> None:  # noqa: ANN001
    """Past its own exercise a cell mutant runs the next exercise's visible parts (make course): damage that
    only a hidden part meets goes unseen there, and ``next_hidden=True`` finds it."""
    base = {"lab": "fixlab", "exercise": "square", "replaces": "square_solution", "why": "test",
            "path": Path("x.py")}
    # breaks world 3 only, which allsum's hidden part alone launches
    poison = ("_real_launch = course_dist.launch\n"
              "def _world3_breaks(fn, world_size, **kw):\n"
              "    if world_size == 3:\n"
              "        raise RuntimeError('poisoned world 3')\n"
              "    return _real_launch(fn, world_size=world_size, **kw)\n"
              "course_dist.launch = _world3_breaks\n")
    hidden_harm = Mutant(name="hidden_harm", source="def square(x):\n    return x + x\n" + poison, **base)
    res = check_lab_mutants(fixlab_course, "fixlab", [hidden_harm])
    assert res["hidden_harm"] == [], f"allsum's visible part passes, and only it runs: {res}"
    res = check_lab_mutants(fixlab_course, "fixlab", [hidden_harm], next_hidden=True)
    assert any("allsum_tests" in p and "poisoned world 3" in p for p in res["hidden_harm"]), \
        f"with next_hidden=True allsum's hidden part runs and fails: {res}"


def test_release_names_each_stub(fixlab_course) -> None:  # noqa: ANN001
    nb = nbformat.read(fixlab_course.labs / "fixlab" / "fixlab.ipynb", as_version=4)
    src = "\n".join(c.source for c in nb.cells)
    assert (
        "raise NotImplementedError(\"fixlab: implement add_solution; hint('fixlab.add') shows a hint\")"
        in src
    )
    assert "BEGIN SOLUTION" not in src and "total_of_both" not in src and "grading_seed" not in src
    assert (fixlab_course.labs / "fixlab" / "hints.yaml").exists()


def test_release_is_deterministic(fixlab_course, tmp_path: Path) -> None:  # noqa: ANN001
    """Re-running the release gives byte-identical files (stable ids, no outputs, sorted keys)."""
    from autograder.release import release

    release(fixlab_course.with_(labs=tmp_path / "labs", build=tmp_path / "build"))
    for p in sorted((fixlab_course.labs / "fixlab").iterdir()):
        assert (tmp_path / "labs" / "fixlab" / p.name).read_bytes() == p.read_bytes(), p.name


def test_short_reasons_never_cut_mid_word() -> None:
    msg = "world 3 length 0: got [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] expected " + "x" * 40
    short = shorten(msg, 60)
    assert short.endswith("…") and len(short) <= 60 and msg.startswith(short[:-1].rstrip(",;:")), short
    assert shorten("AssertionError: a\nsecond line") == "AssertionError: a"


def test_worker_exit_described_by_signal_and_time() -> None:
    assert describe_exit(-9, 8.2) == "killed by SIGKILL after 8 s"
    assert describe_exit(3, 1.0) == "exited with status 3 after 1 s"


def test_feedback_annotation(tmp_path: Path) -> None:
    page = tmp_path / "f.html"
    page.write_text(
        '<h4>lab (Score: 10.0 / 20.0)</h4>\n'
        '<li><a href="#t1">Test cell</a> (Score: 10.0 / 10.0)</li>\n'
        '<li><a href="#w1">Written response</a> (Score: 0.0 / 10.0)</li>\n'
        '<a name="w1"></a><div><span class="pull-right">\n      Score: 0.0 / 10.0 <a href="#top">(Top)</a>'
    )
    annotate_feedback(page, {"t1": "Ring all-reduce", "w1": "Card"}, {"w1"})
    text = page.read_text()
    assert "Ring all-reduce &mdash; Test cell <code>t1</code></a> (Score: 10.0 / 10.0)" in text, text
    assert "(pending manual grading, 10 points)" in text and "pending manual grading (10 points)" in text
    assert "Score: 0.0 / 10.0" not in text and "1 written answer(s) pending manual grading" in text


def test_rubric_accepts_stretch(tmp_path: Path) -> None:
    text = (FIXTURE / "autograder" / "rubric" / "fixlab.yaml").read_text()
    p = tmp_path / "r.yaml"
    p.write_text(text.replace("  - id: allsum\n", "  - id: allsum\n    stretch: true\n", 1))
    r = load_rubric(p)
    assert [e.id for e in r.exercises if e.stretch] == ["allsum"], r
    p.write_text(text.replace("  - id: allsum\n", "  - id: allsum\n    stretch: maybe\n", 1))
    with pytest.raises(ValueError, match="stretch must be true or false, got 'maybe'"):
        load_rubric(p)


def test_reference_run_reports_visible_parts_that_fail_alone() -> None:
    """The reference run executes a test cell as visible part, then hidden part: a visible part that only
    passes with its hidden part (or raises outright) is named; the kernel state is that of one execution."""
    from nbclient import NotebookClient

    from autograder.reference import _execute_split

    meta = {"nbgrader": {"grade": True, "solution": False, "locked": True, "points": 1, "schema_version": 3}}
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("x = 2"),
        nbformat.v4.new_code_cell(
            "assert x == 2\n### BEGIN HIDDEN TESTS\ny = x + 1\n### END HIDDEN TESTS",
            metadata={"nbgrader": {**meta["nbgrader"], "grade_id": "good"}},
        ),
        nbformat.v4.new_code_cell(
            "assert z == 1\n### BEGIN HIDDEN TESTS\nz = 1\n### END HIDDEN TESTS",
            metadata={"nbgrader": {**meta["nbgrader"], "grade_id": "leans_on_hidden"}},
        ),
        nbformat.v4.new_code_cell("assert y == 3 and z == 1"),
    ]
    client = NotebookClient(nb, timeout=60, allow_errors=True, kernel_name="python3")
    assert _execute_split(client, nb) == ["leans_on_hidden"]
    assert not any(o.get("output_type") == "error" for o in nb.cells[3].outputs), nb.cells[3].outputs
    assert [o["ename"] for o in nb.cells[2].outputs if o.get("output_type") == "error"] == ["NameError"]


def test_course_check_jobs_split_file_mutants_and_run_longest_first() -> None:
    """make course's exercise-level checks: one walk per lab (most cell mutants first), then the file mutants
    in batches of one lab (each mutant still in a fresh kernel), latest item first; without file mutants one
    job per lab."""
    from autograder.course import FILE_BATCH, _check_jobs
    from autograder.mutants import find_checked

    cfg = CourseConfig()
    labs = cfg.lab_ids()
    jobs = _check_jobs(cfg, labs, file_mutants=True)
    # valid variants (autograder/valid/) are checked beside the mutants, in the same jobs
    file_names = {m.name for lab in labs for m in find_checked(cfg, lab) if m.is_file_mutant}
    walks = [lab for lab, names in jobs if names is None or not set(names) & file_names]
    counts = [sum(not m.is_file_mutant for m in find_checked(cfg, lab)) for lab in walks]
    assert counts == sorted(counts, reverse=True), (walks, counts)
    batches = jobs[len(walks) :]  # file mutants: batches of one lab, FILE_BATCH at most, each name once
    assert all(0 < len(names) <= FILE_BATCH and set(names) <= file_names for _, names in batches), batches
    assert sorted(n for _, names in batches for n in names) == sorted(file_names)
    assert sorted(lab for lab, _ in _check_jobs(cfg, labs, file_mutants=False)) == sorted(labs)


def test_outcome_comes_from_the_record_alone(fixlab_course, tmp_path: Path) -> None:  # noqa: ANN001
    """Issue 32 item 5: the row is built from the worker's verdict record; no gradebook or notebook is read
    (``work`` is an empty folder here), and one function decides the status."""
    from types import SimpleNamespace

    from autograder.outcome import outcome_from_result
    from autograder.record import CellRecord, Record

    cfg = fixlab_course
    sub = SimpleNamespace(student="s", lab="fixlab")
    rec = Record({
        "add_tests": CellRecord("add_tests", "auto", 30.0, 30.0, checks=3),
        "square_tests": CellRecord("square_tests", "auto", 30.0, 0.0, "AssertionError: square(3): "
                                   "expected 9, got 6", "AssertionError: square(3): expected 9, got 6", 2),
    }, sandbox={"output_dropped_bytes": 2 * 2**20})
    result = {"success": True, "record": rec.to_json(), "notes": ["1 other file(s) were not staged"]}
    o = outcome_from_result(cfg, sub, "ok", "", result, leftovers=0, seconds=1.0)
    assert o.status == "ok", o
    assert o.cells["add_tests"]["score"] == 30.0 and o.cells["square_tests"]["score"] == 0.0, o.cells
    assert o.reason.startswith("square: AssertionError: square(3): expected 9, got 6"), o.reason
    assert "output over the cap dropped (2.0 MiB)" in o.reason, o.reason
    assert o.messages["grader_notes"] == "1 other file(s) were not staged", o.messages
    no_record = outcome_from_result(cfg, sub, "ok", "", {"success": True, "log": "",
                                                                   "error": "ValueError: boom"},
                                    leftovers=0, seconds=1.0)
    assert no_record.status == "error" and "boom" in no_record.reason, no_record
    assert sum(c["score"] for c in no_record.cells.values()) == 0, no_record.cells
    timeout = outcome_from_result(cfg, sub, "timeout", "over the 60 s cap", None, leftovers=0,
                                  seconds=60.0)
    assert (timeout.status, timeout.reason) == ("timeout", "over the 60 s cap"), timeout
