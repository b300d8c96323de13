"""Grading validity on the fixture assignment: tampering does not pay, and one broken submission (loop, hung
process group, segfaulting rank, dying kernel, copied nbgrader cell) costs its own row only, with a reason,
and leaves no process behind. Real nbgrader, real kernels, real gloo process groups.
"""

from __future__ import annotations

import copy

import pandas as pd
import psutil
import pytest

from autograder.grade import grade
from autograder.mutants import reference_submission, release_notebook, replace_cell
from autograder.procs import TOKEN_VAR
from autograder.source import grade_id

from .conftest import write_submission

LAB = "fixlab"
WRONG_SQUARE = 'def square(x):\n    """Return x squared."""\n    return x + x\n'
LOOP_ADD = "def add(a, b):\n    while True:\n        pass\n"
SWALLOW_ADD = (
    "import time\n"
    "def add(a, b):\n"
    "    while True:\n"
    "        try:\n"
    "            time.sleep(0.05)\n"
    "        except KeyboardInterrupt:\n"
    "            pass\n"
    "add(1, 2)\n"
)
HANG_RANK = (
    "def allsum_rank():\n"
    "    import time\n"
    "    import torch\n"
    "    import torch.distributed as dist\n"
    "    if course_dist.rank() == 1:\n"
    "        time.sleep(3600)  # a rank that stops: the other waits in all_reduce\n"
    "    t = torch.tensor([float(course_dist.rank() + 1)])\n"
    "    dist.all_reduce(t)\n"
    "    return t.item()\n"
)
SEGV_RANK = (
    "def allsum_rank():\n"
    "    import os, signal\n"
    "    import torch\n"
    "    import torch.distributed as dist\n"
    "    if course_dist.rank() == 1:\n"
    "        os.kill(os.getpid(), signal.SIGSEGV)\n"
    "    t = torch.tensor([float(course_dist.rank() + 1)])\n"
    "    dist.all_reduce(t)\n"
    "    return t.item()\n"
)
KERNEL_EXIT = "import os\nos._exit(3)  # the kernel process dies\n"


def _submissions(cfg):  # noqa: ANN001, ANN202
    ref = reference_submission(cfg, LAB)
    subs = {"reference": ref, "blank": release_notebook(cfg, LAB)}
    tampered = replace_cell(ref, "square_solution", WRONG_SQUARE)
    tampered = replace_cell(tampered, "square_tests", "assert True  # 'fixed' the test")
    subs["tampered"] = tampered
    deleted = replace_cell(ref, "square_solution", WRONG_SQUARE)
    deleted.cells = [c for c in deleted.cells if grade_id(c) != "square_tests"]
    subs["deleted"] = deleted
    subs["loop"] = replace_cell(ref, "add_solution", LOOP_ADD)
    subs["swallow"] = replace_cell(ref, "add_solution", SWALLOW_ADD)
    subs["hang"] = replace_cell(ref, "allsum_solution", HANG_RANK)
    subs["segv"] = replace_cell(ref, "allsum_solution", SEGV_RANK)
    subs["kernel_exit"] = replace_cell(ref, "square_solution", KERNEL_EXIT)
    dup = copy.deepcopy(ref)
    dup.cells.append(copy.deepcopy(next(c for c in ref.cells if grade_id(c) == "add_tests")))
    dup.cells[-1]["id"] = "copied-cell"
    subs["copied_cell"] = dup
    return subs


def _leftovers(root) -> list[str]:  # noqa: ANN001 - the fixture course's root
    """Processes of THIS grading run still alive: our descendants, and any process carrying a grading token
    whose working directory is inside this fixture course (other agents or benches grade elsewhere)."""
    mine = {p.pid for p in psutil.Process().children(recursive=True)}
    out = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        try:
            if p.status() == psutil.STATUS_ZOMBIE:
                continue
            ours = p.pid in mine or (TOKEN_VAR in p.environ() and str(root) in p.cwd())
            if ours and TOKEN_VAR in p.environ():
                out.append(f"{p.pid}: {' '.join(p.info['cmdline'] or [])[:120]}")
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return out


@pytest.fixture(scope="module")
def graded(fixlab_course, tmp_path_factory):  # noqa: ANN001, ANN201
    cfg = fixlab_course
    subdir = tmp_path_factory.mktemp("submitted")
    for student, nb in _submissions(cfg).items():
        write_submission(subdir, student, LAB, nb)
    (subdir / "nothing" / LAB).mkdir(parents=True)  # a student folder without a notebook
    df = grade(cfg, subdir, progress=False)
    return cfg, subdir, df.set_index("student")


def _row(df: pd.DataFrame, student: str) -> pd.Series:
    return df.loc[student]


pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]  # module fixtures grade a class


def test_every_student_has_one_row(graded):  # noqa: ANN001
    cfg, subdir, df = graded
    csv = pd.read_csv(cfg.build / "grades.csv", keep_default_na=False)
    assert sorted(csv["student"]) == sorted(p.name for p in subdir.iterdir()), csv[["student", "status"]]
    assert csv.groupby(["student", "lab"]).size().max() == 1


def test_reference_full_and_blank_zero(graded):  # noqa: ANN001
    _, _, df = graded
    ref, blank = _row(df, "reference"), _row(df, "blank")
    assert (ref.status, ref["add"], ref["square"], ref["allsum"]) == ("ok", 30, 30, 30), ref.to_dict()
    assert ref.needs_manual == 10, ref.to_dict()  # the written answer waits for a human
    assert (blank["add"], blank["square"], blank["allsum"], blank["explain"]) == (0, 0, 0, 0), blank.to_dict()
    assert "NotImplementedError" in blank.reason, blank.reason


@pytest.mark.parametrize("student", ["tampered", "deleted"])
def test_tampered_or_deleted_tests_are_restored_and_do_not_pay(graded, student):  # noqa: ANN001
    _, _, df = graded
    row = _row(df, student)
    assert row.status == "ok", row.to_dict()
    assert (row["add"], row["square"], row["allsum"]) == (30, 0, 30), row.to_dict()
    assert "square: AssertionError" in row.reason, row.reason


@pytest.mark.parametrize(
    ("student", "exercise", "reason"),
    [
        ("loop", "add", "add: "),  # interrupted at the cell timeout, later cells still run
        ("hang", "allsum", "allsum: Launch"),  # launcher timeout (LaunchTimeout) names the stuck rank
        ("segv", "allsum", "allsum: RankError"),
    ],
)
def test_broken_cell_costs_only_its_exercise(graded, student, exercise, reason):  # noqa: ANN001
    _, _, df = graded
    row = _row(df, student)
    assert row.status == "ok", row.to_dict()
    assert row[exercise] == 0, row.to_dict()
    others = [e for e in ("add", "square", "allsum") if e != exercise]
    assert all(row[e] == 30 for e in others), row.to_dict()
    assert reason in row.reason, row.reason


@pytest.mark.parametrize(
    ("student", "points", "reason"),
    [
        # the kernel dies in the square answer cell: add's points stay (its evidence was frozen), the rest 0
        ("kernel_exit", (30, 0, 0), ("kernel died",)),
        # the loop ignores interrupts: the kernel is killed as unresponsive after the cell timeout, or the
        # per-submission cap kills the whole tree, whichever comes first
        ("swallow", (0, 0, 0), ("unresponsive", "killed after")),
    ],
)
def test_dead_kernel_keeps_what_passed_before(graded, student, points, reason):  # noqa: ANN001
    _, _, df = graded
    row = _row(df, student)
    got = (row["add"], row["square"], row["allsum"])
    assert got == points, f"{student}: expected {points}, got {got}: {row.to_dict()}"
    assert any(r in row.reason for r in reason), row.reason


def test_copied_test_cell_is_not_run(graded):  # noqa: ANN001
    """Only answer cells are graded (autograder.rebuild): a copied test cell is left out, not fatal."""
    _, _, df = graded
    row = _row(df, "copied_cell")
    assert (row.status, row["add"], row["square"], row["allsum"]) == ("ok", 30, 30, 30), row.to_dict()


def test_fatal_submission_gets_zero_row_with_reason(graded):  # noqa: ANN001
    _, _, df = graded
    row = _row(df, "nothing")
    assert row.status != "ok", row.to_dict()
    assert row.score == 0 and row.max_score == 100, row.to_dict()
    assert "no notebook in nothing/fixlab/" in row.reason, row.reason


def test_no_process_survives(graded):  # noqa: ANN001
    cfg, _, _ = graded
    assert _leftovers(cfg.root) == []


def test_feedback_and_gradebook(graded):  # noqa: ANN001
    cfg, _, _ = graded
    html = cfg.nbgrader_root / "feedback" / "reference" / LAB / f"{LAB}.html"
    assert html.exists() and "add_tests" in html.read_text(), html
    export = pd.read_csv(cfg.nbgrader_root / "grades_nbgrader.csv")
    ref = export[export["student_id"] == "reference"]
    assert float(ref["raw_score"].iloc[0]) == 90.0, ref.to_dict("records")


def test_rerun_is_idempotent(graded, tmp_path):  # noqa: ANN001
    cfg, subdir, _ = graded
    before = pd.read_csv(cfg.build / "grades.csv", keep_default_na=False)
    again = tmp_path / "again"
    write_submission(again, "reference", LAB, reference_submission(cfg, LAB))
    grade(cfg, again, progress=False, force=True)  # regraded, same rows
    after = pd.read_csv(cfg.build / "grades.csv", keep_default_na=False)
    assert len(after) == len(before) and sorted(after["student"]) == sorted(before["student"])
    cols = ["student", "lab", "score", "status"]
    assert after[cols].equals(before[cols]), (before[cols], after[cols])
