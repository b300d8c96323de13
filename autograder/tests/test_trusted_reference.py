"""make course grades the course's own reference submission through sandboxed nbgrader AND needs the
reference run's evidence: with ``trusted=("reference",)`` the one graded run is both (its evidence published
to the cache under the cache's lock). What it publishes must judge exactly like the plain reference run, and a
trusted reference that breaks publishes nothing (its row fails; the next caller runs the reference)."""

from __future__ import annotations

import json

import pytest

from autograder.course import auto_max
from autograder.grade import grade
from autograder.judge import judge_cell, load_evidence
from autograder.mutants import reference_submission, release_notebook, replace_cell
from autograder.reference import evidence_path, reference_evidence
from autograder.rubrics import load_rubric

from .conftest import write_submission

LAB = "fixlab"
pytestmark = pytest.mark.timeout(900)


def test_trusted_reference_submission_is_the_reference_run(fixlab_course, tmp_path) -> None:  # noqa: ANN001
    cfg = fixlab_course.with_(build=tmp_path / "build", workers=1, fast=True)
    subs = tmp_path / "submitted"
    write_submission(subs, "reference", LAB, reference_submission(fixlab_course, LAB))
    write_submission(subs, "blank", LAB, release_notebook(fixlab_course, LAB))
    df = grade(cfg, subs, progress=False, seed=7, trusted=("reference",)).set_index("student")
    full = sum(auto_max(load_rubric(cfg.rubric / f"{LAB}.yaml")).values())
    assert df.loc["reference", "score"] == full, df.loc["reference"].to_dict()
    assert df.loc["blank", "score"] == 0, df.loc["blank"].to_dict()
    published = evidence_path(cfg, LAB, 7, True)
    assert json.loads((published / "run.json").read_text())["from"] == "the reference submission"
    # the plain reference run (same seed, its own build folder): the two judge each other clean
    plain_cfg = cfg.with_(build=tmp_path / "plain")
    plain = load_evidence(reference_evidence(plain_cfg, LAB, 7, True))
    mine = load_evidence(published)
    assert sorted(plain) == sorted(mine) and plain, (sorted(plain), sorted(mine))
    for gid in plain:
        assert not judge_cell(gid, plain[gid], mine[gid]), (gid, judge_cell(gid, plain[gid], mine[gid]))
        assert not judge_cell(gid, mine[gid], plain[gid]), (gid, judge_cell(gid, mine[gid], plain[gid]))


def test_a_broken_trusted_reference_publishes_nothing(fixlab_course, tmp_path) -> None:  # noqa: ANN001
    cfg = fixlab_course.with_(build=tmp_path / "build", workers=1, fast=True)
    subs = tmp_path / "submitted"
    ref = reference_submission(fixlab_course, LAB)
    broken = replace_cell(ref, "add_solution", "def add(a, b):\n    return 0\n")
    write_submission(subs, "reference", LAB, broken)
    df = grade(cfg, subs, progress=False, seed=8, trusted=("reference",)).set_index("student")
    assert df.loc["reference", "score"] == 0, df.loc["reference"].to_dict()  # nothing to judge against
    assert not (evidence_path(cfg, LAB, 8, True) / "run.json").exists()
