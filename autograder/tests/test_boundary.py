"""The process boundary (issue 32): every route by which an answer cell once reached what measures or decides
a grade, graded for real with the static scan switched off. Each attack earns 0 points it did not earn *by
construction*: the answer cells run in the sandboxed student process, the trusted kernel binds only the
names each exercise declares, and only the notebook is staged.

One grading batch on the fixture lab (add 30, square 30, allsum 30 auto points): every attacker answers
``add`` and ``square`` correctly and attacks ``allsum`` (a stub that cannot earn its 30 points unless the
attack reaches the trusted side), so each must score exactly (30, 30, 0); the honest idioms that the old
scan punished must score (30, 30, 30).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nbformat
import pytest

from autograder.mutants import reference_submission, replace_cell

from .conftest import write_submission

LAB = "fixlab"
STUB_ALLSUM = 'def allsum_rank():\n    raise NotImplementedError("stub")\n'
# what a fake launch returns: the right answers at world 2 and 3, without running anything
FAKE = ("def _fake(fn, world_size=2, **kw):\n"
        "    return [float(world_size * (world_size + 1) // 2)] * world_size\n")

ATTACKS = {
    # a course_dist/ package beside the notebook (no attack code in any cell): not staged
    "shadow_package": STUB_ALLSUM,
    # a sidecar module imported by an answer cell: not staged, and it would patch the student process only
    "sidecar": "import helper_patch\n" + STUB_ALLSUM,
    "alias_patch": FAKE + "import course_dist\n_m = course_dist\n_m.launch = _fake\n" + STUB_ALLSUM,
    "aliased_setattr": FAKE + "import course_dist\n_s = setattr\n_s(course_dist, 'launch', _fake)\n"
    + STUB_ALLSUM,
    "map_setattr": FAKE + "import course_dist\nlist(map(setattr, [course_dist], ['launch'], [_fake]))\n"
    + STUB_ALLSUM,
    "vars_update": FAKE + "import course_dist\nvars(course_dist).update(launch=_fake)\n" + STUB_ALLSUM,
    "code_swap": FAKE + "import course_dist.launch as _L\n_L.launch.__code__ = _fake.__code__\n"
    + STUB_ALLSUM,
    # a pickle whose REDUCE calls setattr(course_dist, "launch", print)
    "pickle_gadget": "import pickle\npickle.loads(b\"cbuiltins\\nsetattr\\n(cimportlib\\nimport_module\\n"
    "(S'course_dist'\\ntRS'launch'\\ncbuiltins\\nprint\\ntR.\")\n" + STUB_ALLSUM,
    "magic_line": "%time x = 1\n" + FAKE + "import course_dist\ncourse_dist.launch = _fake\n" + STUB_ALLSUM,
    # rewrites every evidence file it can find after each cell, before the reply freezes it
    "ipython_hook": (
        "import IPython, glob, os, torch\n"
        "def _rewrite(*a):\n"
        "    where = os.environ.get('COURSE_EVIDENCE_DIR', '/nonexistent')\n"
        "    for p in glob.glob(os.path.join(where, '*.pt')):\n"
        "        d = torch.load(p, weights_only=True)\n"
        "        for r in d['records'].values():\n"
        "            r['value'] = [3.0, 3.0]\n"
        "        torch.save(d, p)\n"
        "IPython.get_ipython().events.register('post_run_cell', _rewrite)\n" + STUB_ALLSUM
    ),
    # the bare name the test cell calls, rebound: no attribute is assigned anywhere
    "bare_name": FAKE + "class _FakeDist:\n    launch = staticmethod(_fake)\n"
    "    rank = staticmethod(lambda: 0)\ncourse_dist = _FakeDist()\n" + STUB_ALLSUM,
    # a thread that rewrites evidence while the tests run (between a cell and its reply)
    "evidence_thread": (
        "import threading, time, glob, os\n"
        "def _loop():\n"
        "    for _ in range(2000):\n"
        "        for p in glob.glob('/tmp/**/evidence/*.pt', recursive=True):\n"
        "            open(p, 'wb').write(b'forged')\n"
        "        time.sleep(0.01)\n"
        "threading.Thread(target=_loop, daemon=True).start()\n" + STUB_ALLSUM
    ),
    # fills the work dir: ENOSPC at the quota, never the host's disk
    "disk_fill": (
        "try:\n    with open('fill.bin', 'wb') as f:\n        for _ in range(4096):\n"
        "            f.write(b'x' * (1 << 20))\nexcept OSError as e:\n    print('FILL STOPPED', e.errno)\n"
        + STUB_ALLSUM
    ),
    "sparse_file": STUB_ALLSUM,  # a 4 GiB sparse file beside the notebook: not staged, never copied
    "many_files": STUB_ALLSUM,  # 20,000 small files beside the notebook: graded, not refused
}

HONEST = (
    "%matplotlib inline\n"
    "import gc, sys, io, inspect, importlib.util, random\n"
    "import torch\n"
    "gc.collect()\n"
    "_buf = io.StringIO(); sys.stdout = _buf; print('quiet'); sys.stdout = sys.__stdout__\n"
    "_where = inspect.stack()[0].function\n"
    "_has_torch = importlib.util.find_spec('torch') is not None\n"
    "random.seed(0); torch.manual_seed(0)\n"
    "class _Box:\n    def __init__(self):\n        setattr(self, 'value', 3.0)\n"
    "%time _ = _Box()\n"
)


def _submissions(cfg) -> dict:  # noqa: ANN001
    ref = reference_submission(cfg, LAB)
    subs = {"reference": ref}
    for name, cell in ATTACKS.items():
        subs[name] = replace_cell(ref, "allsum_solution", cell)
    allsum = next(c.source for c in ref.cells if c.metadata.get("nbgrader", {}).get("grade_id")
                  == "allsum_solution")
    subs["honest"] = replace_cell(ref, "allsum_solution", HONEST + allsum)
    return subs


@pytest.fixture(scope="module")
def bounded(fixlab_course, tmp_path_factory):  # noqa: ANN001, ANN201
    from autograder.grade import grade

    cfg = fixlab_course
    subdir = tmp_path_factory.mktemp("boundary")
    for student, nb in _submissions(cfg).items():
        write_submission(subdir, student, LAB, nb)
    shadow = subdir / "shadow_package" / LAB / "course_dist"
    shadow.mkdir()
    (shadow / "__init__.py").write_text(FAKE + "launch = _fake\ndef rank():\n    return 0\n")
    (subdir / "sidecar" / LAB / "helper_patch.py").write_text(
        FAKE + "import course_dist\ncourse_dist.launch = _fake\n")
    with open(subdir / "sparse_file" / LAB / "data.bin", "wb") as f:
        f.truncate(4 << 30)
    many = subdir / "many_files" / LAB / "junk"
    many.mkdir()
    for i in range(20_000):
        (many / f"{i}.txt").write_bytes(b"x")
    env = {"COURSE_PROCESS_BOUNDARY": LAB, "COURSE_TAMPER_SCAN": "off", "COURSE_SANDBOX_WORK_MB": "256"}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        df = grade(cfg, subdir, progress=False, out=cfg.build / "boundary.csv", seed=11)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    yield cfg, df.set_index("student"), subdir
    shutil.rmtree(subdir / "sparse_file", ignore_errors=True)


pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]  # a module fixture grades a class


def _points(row) -> tuple:  # noqa: ANN001
    return (row["add"], row["square"], row["allsum"])


@pytest.mark.parametrize("student", ["reference", "honest"])
def test_controls_earn_everything(bounded, student) -> None:  # noqa: ANN001
    _, df, _ = bounded
    row = df.loc[student]
    assert (row["status"], _points(row)) == ("ok", (30, 30, 30)), f"{student}: {row.to_dict()}"


@pytest.mark.parametrize("student", sorted(ATTACKS))
def test_attack_earns_nothing_with_the_scan_off(bounded, student) -> None:  # noqa: ANN001
    _, df, _ = bounded
    row = df.loc[student]
    got = (row["status"], _points(row))
    assert got == ("ok", (30, 30, 0)), f"{student}: expected ('ok', (30, 30, 0)), got {got}: {row['reason']}"


def test_only_the_notebook_is_staged(bounded) -> None:  # noqa: ANN001
    import json

    cfg, _, _ = bounded
    for student, what in [("shadow_package", "course_dist"), ("sidecar", "helper_patch.py"),
                          ("sparse_file", "data.bin"), ("many_files", "junk")]:
        for stage in ("autograded", "feedback"):
            d = cfg.nbgrader_root / stage / student / LAB
            assert not (d / what).exists(), f"{student}: {what} was copied into {stage}/"
        notes = json.loads((cfg.nbgrader_root / "feedback" / student / LAB / "grading.json").read_text())
        assert "not staged" in notes["messages"].get("grader_notes", ""), (student, notes["messages"])
    notes = json.loads((cfg.nbgrader_root / "feedback" / "many_files" / LAB / "grading.json").read_text())
    assert "20000 other file(s)" in notes["messages"]["grader_notes"], notes["messages"]["grader_notes"]


def test_disk_fill_stops_at_the_quota(bounded) -> None:  # noqa: ANN001
    cfg, _, _ = bounded
    nb = nbformat.read(cfg.nbgrader_root / "autograded" / "disk_fill" / LAB / f"{LAB}.ipynb", as_version=4)
    text = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
    assert "FILL STOPPED 28" in text, f"expected ENOSPC (28) inside the sandbox, outputs: {text[-500:]}"


def test_oversized_notebook_is_an_error_row(fixlab_course, tmp_path: Path) -> None:  # noqa: ANN001
    """A sparse notebook of 4 GiB apparent size: refused before it is read, with the reason, no copy."""
    from autograder.grade import grade

    cfg = fixlab_course
    path = tmp_path / "huge" / LAB / f"{LAB}.ipynb"
    path.parent.mkdir(parents=True)
    with open(path, "wb") as f:
        f.truncate(4 << 30)
    df = grade(cfg, tmp_path, progress=False, out=cfg.build / "huge.csv", seed=11).set_index("student")
    row = df.loc["huge"]
    assert row["status"] == "error" and "over the 64 MiB limit" in row["reason"], row.to_dict()
    assert not (cfg.nbgrader_root / "autograded" / "huge").exists()
