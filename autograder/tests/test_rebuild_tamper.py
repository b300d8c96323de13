"""The rebuild (what of a submission runs) and the tamper scan (what an answer cell may not touch), without
kernels: every class of finding is flagged, no reference answer or known-wrong answer of any lab is, and the
rebuild keeps exactly the answer cells."""

from __future__ import annotations

import copy

import nbformat
import pytest

from autograder.config import CourseConfig
from autograder.mutants import find_mutants, replace_cell, source_notebook
from autograder.rebuild import Unusable, rebuild
from autograder.source import grade_id, nbgrader_meta
from autograder.tamper import scan_cell, scan_notebook

CFG = CourseConfig()

FLAGGED = {
    "module attribute": (
        "import torch\ntorch.allclose = lambda *a, **k: True\n",
        "assigns an attribute of 'torch'",
    ),
    "course helper": (
        "from course_dist.labkit import lab04\nlab04.drill = print\n",
        "assigns an attribute of 'lab04'",
    ),
    "setattr": ("import course_dist\nsetattr(course_dist, 'launch', print)\n", "setattr() on 'course_dist'"),
    "delete": ("import math\ndel math.isclose\n", "deletes an attribute of 'math'"),
    "sys.modules": ("import sys\nsys.modules['x'] = None\n", "sys.modules"),
    "builtins": ("import builtins\nbuiltins.len = lambda x: 0\n", "builtins"),
    "exec": ("exec('x = 1')\n", "uses exec"),
    "ctypes": ("import ctypes\n", "imports ctypes"),
    "posix": ("import posix\nposix.fsync(3)\n", "imports posix"),
    "frames": ("import sys\nf = sys._getframe(1).f_globals\n", "frame objects"),
    "ipython hooks": ("ip = get_ipython()\n", "uses get_ipython"),
    "evidence recorder": ("from course_dist.evidence import Evidence\n", "evidence recorder"),
    "evidence dir": ("import os\np = os.environ['COURSE_EVIDENCE_DIR']\n", "mentions COURSE_EVIDENCE"),
    "namespace": ("import math\nvars(math)['pi'] = 3\n", "a namespace through vars()"),
    "module dict": ("import math\nmath.__dict__['pi'] = 3\n", "an item of 'math.__dict__'"),
}


@pytest.mark.parametrize("case", sorted(FLAGGED))
def test_scan_flags_each_class(case: str) -> None:
    src, why = FLAGGED[case]
    found = scan_cell("x_solution", src, {"torch", "course_dist"}, set())
    assert any(why in f.why or why in f.text for f in found), f"{case}: expected {why!r}, got {found}"


def test_scan_leaves_honest_code_alone() -> None:
    src = (
        "import torch\nimport torch.distributed as dist\n"
        "def step(model, opt):\n    model.weight = torch.nn.Parameter(torch.zeros(2))\n"
        "    opt.param_groups[0]['lr'] = 0.1\n    torch.backends.cudnn.deterministic = True\n"
        "    dist.all_reduce(model.weight.grad)\n"
        "import os, pandas as pd, matplotlib.pyplot as plt\n"
        "os.environ['OMP_NUM_THREADS'] = '1'\nplt.rcParams['figure.dpi'] = 100\n"
        "pd.options.display.width = 200\n"
    )
    assert scan_cell("x_solution", src, {"torch", "dist"}, set()) == []


@pytest.mark.parametrize("lab", CFG.lab_ids())
def test_no_reference_or_known_wrong_answer_is_flagged(lab: str) -> None:
    """A finding withholds points: it must never fire on an honest answer (the references) or a plausible
    wrong one (the mutants), or the scan would punish ordinary code."""
    nb = source_notebook(CFG, lab)
    answers = {grade_id(c) for c in nb.cells if nbgrader_meta(c).get("solution") and c.cell_type == "code"}
    found = [str(f) for f in scan_notebook(nb, answers)]
    for m in find_mutants(CFG, lab):
        if not m.is_file_mutant:
            found += [
                f"{m.name}: {f}" for f in scan_notebook(replace_cell(nb, m.replaces, m.source), {m.replaces})
            ]
    assert found == [], found


def _release(lab: str = "lab02") -> nbformat.NotebookNode:
    return nbformat.read(CFG.nbgrader_root / "release" / lab / f"{lab}.ipynb", as_version=4)


@pytest.fixture(scope="module")
def release() -> nbformat.NotebookNode:
    from autograder.release import ensure_released

    ensure_released(CFG, "lab02")
    return _release()


def test_rebuild_keeps_answers_and_drops_the_rest(release) -> None:  # noqa: ANN001
    answers = [
        i for i, c in enumerate(release.cells) if nbgrader_meta(c).get("solution") and c.cell_type == "code"
    ]
    student = copy.deepcopy(release)
    student.cells[answers[0]].source = "ANSWER = 1\n"
    tests = [
        i
        for i, c in enumerate(release.cells)
        if nbgrader_meta(c).get("grade") and not nbgrader_meta(c).get("solution")
    ]
    student.cells[tests[0]].source = "assert True  # the student 'fixed' the test"
    student.cells.append(nbformat.v4.new_code_cell("print('added')"))
    nb, notes = rebuild(student, release)
    got = {grade_id(c): c.source for c in nb.cells if grade_id(c)}
    assert got[grade_id(release.cells[answers[0]])] == "ANSWER = 1\n"
    assert got[grade_id(release.cells[tests[0]])] == release.cells[tests[0]].source  # the release's test
    assert "print('added')" not in [c.source for c in nb.cells]
    assert any("2 cell(s) outside the answer cells" in n for n in notes), notes


def test_rebuild_finds_an_answer_by_position_and_refuses_duplicates(release) -> None:  # noqa: ANN001
    i = next(
        i for i, c in enumerate(release.cells) if nbgrader_meta(c).get("solution") and c.cell_type == "code"
    )
    gid = grade_id(release.cells[i])
    student = copy.deepcopy(release)
    student.cells[i].metadata.pop("nbgrader")
    student.cells[i].source = "MINE = 2\n"
    nb, notes = rebuild(student, release)
    assert next(c.source for c in nb.cells if grade_id(c) == gid) == "MINE = 2\n"
    assert any(f"{gid} was found by its position" in n for n in notes), notes
    dup = copy.deepcopy(release)
    dup.cells.append(copy.deepcopy(release.cells[i]))
    with pytest.raises(Unusable, match=gid):
        rebuild(dup, release)
