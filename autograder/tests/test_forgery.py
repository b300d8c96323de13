"""Submissions that forge their own evidence (issue 22): each earns 0 points it did not earn, with a reason.

One grading batch on the fixture lab (fixlab: add 30, square 30, allsum 30 auto points, a written answer):

* ``forger``: a wrong ``square``, and a cell the student added at the end that rewrites the square tests'
  evidence file with the right values (the files stayed writable until the judge ran);
* ``inside``: a wrong ``square``; the allsum *answer cell* (which runs after the square tests) rewrites that
  evidence - the evidence was frozen when the square tests replied, and the scan flags the cell;
* ``patcher``: a wrong ``add`` whose answer cell patches the evidence recorder to record the right sum (a
  patched comparison helper), and a cell added before the allsum tests that replaces ``course_dist.launch``
  (a patched measuring helper) for a stub ``allsum``;
* ``wrapper``: a right ``square`` whose answer cell wraps ``course_dist.launch`` with ``setattr`` so the
  stub ``allsum`` looks right (a wrapped drill): every later exercise is withheld for review;
* ``mirror``: the notebook is a symlink to a classmate's: refused before anything is copied; ``linker``: a
  symlink beside the notebook points at the course's solutions: never staged (only the notebook is), graded;
* ``relabel``: the reference answers, with a test cell's nbgrader metadata edited (made an answer cell,
  grade id renamed) and an answer cell's metadata stripped: restored from the release, graded in full;
* ``dies_late``: right ``add`` and ``square``, then an allsum answer cell that kills the kernel: the cells
  that passed before keep their points.

Controls: the reference earns 90 alone and here; nothing survives.
"""

from __future__ import annotations

import copy
import os

import nbformat
import pytest

from autograder.mutants import reference_submission, replace_cell
from autograder.source import grade_id

from .conftest import write_submission

LAB = "fixlab"
WRONG_SQUARE = 'def square(x):\n    """Return x squared."""\n    return x + x\n'
STUB_ALLSUM = 'def allsum_rank():\n    raise NotImplementedError("stub")\n'

# rewrites square_tests.pt with x*x for every key it recorded: what a right answer would have recorded
FORGE = r"""
import os, re, torch
_p = os.path.join(os.environ["COURSE_EVIDENCE_DIR"], "square_tests.pt")
if os.path.exists(_p):
    _d = torch.load(_p, weights_only=True)
    for _k, _rec in _d["records"].items():
        _x = int(re.search(r"square\((-?\d+)\)", _k).group(1))
        _rec["value"] = _x * _x
    torch.save(_d, _p)
    print("FORGED", len(_d["records"]))
"""

PATCH_RECORDER = r"""
import course_dist.evidence as _ev
_orig = _ev.Evidence.equal
def _equal(self, key, value):
    if key.startswith("add("):
        a, b = (int(v) for v in key[4:-1].split(", "))
        value = a + b  # the right value, whatever add() returned
    return _orig(self, key, value)
_ev.Evidence.equal = _equal
def add(a, b):
    return a - b
"""

FAKE_LAUNCH_CELL = (
    "import course_dist\n"
    "def _fake(fn, world_size=2, **k):\n"
    "    return [float(world_size * (world_size + 1) // 2)] * world_size\n"
    "course_dist.launch = _fake\n"
)

WRAP_LAUNCH = r"""
import course_dist
def square(x):
    return x * x
def _fake(fn, world_size=2, **k):
    return [float(world_size * (world_size + 1) // 2)] * world_size
setattr(course_dist, "launch", _fake)
"""

DIE = "import os\nos._exit(3)\n"


def _cell(nb: nbformat.NotebookNode, gid: str) -> int:
    return next(i for i, c in enumerate(nb.cells) if grade_id(c) == gid)


def _submissions(cfg) -> dict:  # noqa: ANN001
    ref = reference_submission(cfg, LAB)
    subs = {"reference": ref}
    nb = replace_cell(ref, "square_solution", WRONG_SQUARE)
    nb.cells.append(nbformat.v4.new_code_cell(FORGE))
    subs["forger"] = nb
    nb = replace_cell(ref, "square_solution", WRONG_SQUARE)
    subs["inside"] = replace_cell(
        nb, "allsum_solution", ref.cells[_cell(ref, "allsum_solution")].source + FORGE
    )
    nb = replace_cell(ref, "add_solution", PATCH_RECORDER)
    nb = replace_cell(nb, "allsum_solution", STUB_ALLSUM)
    nb.cells.insert(_cell(nb, "allsum_tests"), nbformat.v4.new_code_cell(FAKE_LAUNCH_CELL))
    subs["patcher"] = nb
    nb = replace_cell(ref, "square_solution", WRAP_LAUNCH)
    subs["wrapper"] = replace_cell(nb, "allsum_solution", STUB_ALLSUM)
    subs["linker"] = ref
    nb = copy.deepcopy(ref)
    meta = nb.cells[_cell(nb, "square_tests")].metadata.nbgrader
    meta.update(solution=True, grade=False, locked=False, grade_id="square_tests_mine")
    nb.cells[_cell(nb, "add_solution")].metadata.pop("nbgrader")
    subs["relabel"] = nb
    subs["dies_late"] = replace_cell(ref, "allsum_solution", DIE)
    return subs


@pytest.fixture(scope="module")
def forged(fixlab_course, tmp_path_factory):  # noqa: ANN001, ANN201
    from autograder.grade import grade

    cfg = fixlab_course
    subdir = tmp_path_factory.mktemp("forgery")
    for student, nb in _submissions(cfg).items():
        write_submission(subdir, student, LAB, nb)
    (subdir / "mirror" / LAB).mkdir(parents=True)
    os.symlink(subdir / "reference" / LAB / f"{LAB}.ipynb", subdir / "mirror" / LAB / f"{LAB}.ipynb")
    os.symlink(cfg.root / "solutions", subdir / "linker" / LAB / "notes")
    df = grade(cfg, subdir, progress=False, out=cfg.build / "forgery.csv", seed=5)
    return cfg, df.set_index("student")


pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]  # a module fixture grades a class


def _points(row) -> tuple:  # noqa: ANN001
    return (row["add"], row["square"], row["allsum"])


def test_reference_control(forged) -> None:  # noqa: ANN001
    _, df = forged
    row = df.loc["reference"]
    assert (row["status"], _points(row)) == ("ok", (30, 30, 30)), row.to_dict()


@pytest.mark.parametrize(
    ("student", "status", "points", "reason"),
    [
        ("forger", "ok", (30, 0, 30), "square: "),  # the forging cell never runs
        ("inside", "needs_review", (30, 0, 0), "COURSE_EVIDENCE"),  # frozen evidence; the cell is flagged
        ("patcher", "needs_review", (0, 0, 0), "needs review: add_solution line 2"),
        ("wrapper", "needs_review", (30, 0, 0), "setattr() on 'course_dist'"),
        ("relabel", "ok", (30, 30, 30), ""),
        ("dies_late", "ok", (30, 30, 0), "kernel died"),
    ],
)
def test_forgery_earns_nothing(forged, student, status, points, reason) -> None:  # noqa: ANN001
    _, df = forged
    row = df.loc[student]
    got = (row["status"], _points(row))
    assert got == (status, points), f"{student}: expected {(status, points)}, got {got}: {row['reason']}"
    assert reason in row["reason"], f"{student}: expected {reason!r} in the reason, got {row['reason']!r}"


def test_linked_notebook_refused_before_copying(forged) -> None:  # noqa: ANN001
    cfg, df = forged
    row = df.loc["mirror"]
    assert (row["status"], row["score"]) == ("error", 0), row.to_dict()
    assert "symbolic link" in row["reason"] and "mirror/fixlab/fixlab.ipynb" in row["reason"], row["reason"]
    assert not (cfg.nbgrader_root / "autograded" / "mirror").exists(), "a refused folder was copied"


def test_link_beside_the_notebook_is_never_staged(forged) -> None:  # noqa: ANN001
    """Issue 32: only the notebook is staged: a link beside it is left out (with a note), never followed."""
    cfg, df = forged
    row = df.loc["linker"]
    assert (row["status"], _points(row)) == ("ok", (30, 30, 30)), row.to_dict()
    for stage in ("submitted", "autograded", "feedback"):
        assert not (cfg.nbgrader_root / stage / "linker" / LAB / "notes").exists(), f"the link is in {stage}/"


def test_notes_say_what_was_left_out(forged) -> None:  # noqa: ANN001
    import json

    cfg, _ = forged
    notes = {}
    for student in ("forger", "relabel", "patcher"):
        g = json.loads((cfg.nbgrader_root / "feedback" / student / LAB / "grading.json").read_text())
        notes[student] = g["messages"].get("grader_notes", "")
    assert "1 cell(s) outside the answer cells" in notes["forger"], notes
    assert "add_solution was found by its position" in notes["relabel"], notes
    assert "1 cell(s) outside the answer cells" in notes["patcher"], notes


def test_cleared_review_withholds_nothing(forged) -> None:  # noqa: ANN001
    """The instructor read ``inside``'s flagged line and clears it: regraded, nothing withheld (its square
    stays 0: the evidence it tried to rewrite was frozen before its code ran), the finding kept in the
    notes."""
    import json

    from autograder.grade import grade

    cfg, _ = forged
    subdir = cfg.build.parent / "forgery-cleared"
    write_submission(subdir, "inside", LAB, _submissions(cfg)["inside"])
    out = cfg.build / "forgery-cleared.csv"
    row = grade(cfg, subdir, progress=False, out=out, seed=5, students=["inside"], cleared=("inside",))
    row = row.set_index("student").loc["inside"]
    assert (row["status"], _points(row)) == ("ok", (30, 0, 30)), row.to_dict()
    g = json.loads((cfg.nbgrader_root / "feedback" / "inside" / LAB / "grading.json").read_text())
    assert "cleared by the instructor" in g["messages"].get("grader_notes", ""), g["messages"]


def test_nothing_survives(forged) -> None:  # noqa: ANN001
    from .test_validity import _leftovers

    cfg, _ = forged
    assert _leftovers(cfg.root) == []
