"""Grading validity per lab, within the suite's budget as the course grows: per group of labs ONE nbgrader run
grades the reference and the untouched release (the reference earns every auto point, the release none), and
meanwhile every mutant is checked at the exercise level (one kernel pass per lab: it loses its own exercise,
and its visible tests catch it; that it costs no other exercise is `make course`'s check). Both come from
`autograder.course.grade_with_mutant_checks`, the code `make course` runs.

The labs are split into two groups of about equal work, one test module each (tests/test_pipeline_grading_*.py
import this module and set ``GROUP``): under `make test` (``--dist loadfile``) each pytest-xdist worker starts
on one group, so neither half waits for the other's labs. The test functions below are shared; the group's
labs come from the importing module (:func:`pytest_generate_tests`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _pipeline import CFG, FILE_MUTANTS, LABS, mutant_params, pipeline_group

from autograder.course import auto_max, build_samples, grade_with_mutant_checks, verdict
from autograder.reference import reference_evidence
from autograder.release import release
from autograder.rubrics import load_rubric

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not LABS, reason="no lab sources under solutions/ yet"),
    # the module fixture grades every lab's sample class and checks every mutant (the homework's 11 file
    # mutants dominate): far beyond the suite's 600 s per-test default, which counts fixture set-up too
    pytest.mark.timeout(4800),
]
SEED = 20261201  # fixed: a failure here reproduces with `python -m autograder grade ... --seed 20261201`


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """The group's labs (the importing module's ``GROUP``), its mutants and valid variants."""
    labs = pipeline_group(metafunc.module.GROUP)
    if "student" in metafunc.fixturenames:
        metafunc.parametrize("student", ["reference", "blank"])
    if "name" in metafunc.fixturenames:
        metafunc.parametrize(("lab", "name"), mutant_params(labs))
    elif "lab" in metafunc.fixturenames:
        metafunc.parametrize("lab", labs)


@pytest.fixture(scope="module")
def validity(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    labs = pipeline_group(request.module.GROUP)
    tmp = tmp_path_factory.mktemp("grading")
    # the homework's drills take minutes when two labs' mutant checks share the 2 cores: a roomier cap
    # Under `make test` (two pytest-xdist workers) the other worker runs the rest of the suite beside this
    # class: one grader and one lab's mutant check at a time keep the 2 cores from being oversubscribed.
    par = 1 if os.environ.get("PYTEST_XDIST_WORKER") else 2
    cfg = CFG.with_(labs=tmp / "labs", build=tmp / "build", fast=True, notebook_timeout=2400, workers=par)
    release(cfg, labs)
    subs = tmp / "submitted"
    for lab in labs:
        build_samples(cfg, lab, subs, mutants=[])  # reference + blank only; mutants at the exercise level
    # The sandboxed reference row of the group's last lab is judged against a plain run of the reference
    # (computed first, so grading finds it cached): sandboxed and plain execution agree. Every other lab's
    # graded reference IS its reference run, as under make course (trusted=("reference",) below): one
    # execution less per lab (a plain fast reference run: 9-35 CPU-s, 13-35 s alone, measured per lab).
    reference_evidence(cfg, labs[-1], SEED, True)
    df, mutants = grade_with_mutant_checks(
        cfg,
        subs,
        labs,
        out=cfg.build / "grades.csv",
        seed=SEED,
        progress=False,
        file_mutants=FILE_MUTANTS,
        mutant_labs_at_once=par,
        trusted=("reference",),
        # Each cell mutant's check stops after its own exercise: it loses that exercise and its visible tests
        # catch it. That it costs nothing else (its run through the next exercise's tests, 40-50 % of a
        # walk's cell time) is make course's to prove; valid variants still run through the next exercise.
        next_exercise=False,
        # Once the class is graded its slot's core is free: a second check lane takes the next walk (with one
        # lane the walks were the suite's critical path, 1063 s and 1253 s of pytest's 1085 s and 1276 s;
        # with two after grading: 1020 s of 1103 s, the rest of the suite finishing beside it, measured)
        lanes_after_grading=2,
    )
    return df.set_index(["student", "lab"]), mutants


def test_reference_full_blank_zero(validity, lab: str, student: str) -> None:  # noqa: ANN001
    graded, _ = validity
    rubric = load_rubric(CFG.rubric / f"{lab}.yaml")
    row = graded.loc[(student, lab)]
    assert verdict(row, {"kind": student}, rubric) == "ok", (row.to_dict(), auto_max(rubric))


def test_mutant_loses_its_exercise(validity, lab: str, name: str) -> None:  # noqa: ANN001
    _, mutants = validity
    problems = mutants[lab].get(name)
    assert problems is not None, f"{lab}/{name} was not checked: {sorted(mutants[lab])}"
    assert not problems, f"{lab}/{name}:\n  " + "\n  ".join(problems)


def test_reference_passes_every_visible_part(validity, lab: str) -> None:  # noqa: ANN001
    """Honest visible tests: the reference passes each test cell's visible part alone."""
    _, mutants = validity
    problems = mutants[lab].get("<reference>") or []
    assert not problems, f"{lab}: the reference fails visible parts:\n  " + "\n  ".join(problems)


def test_samples_path_layout(tmp_path: Path) -> None:
    """build_samples writes nbgrader's submitted layout: <root>/<student>/<lab>/<lab>.ipynb."""
    if not LABS:
        pytest.skip("no labs")
    lab = LABS[0]
    cfg = CFG.with_(labs=tmp_path / "labs", build=tmp_path / "build")
    release(cfg, [lab])
    exp = build_samples(cfg, lab, tmp_path / "s", mutants=[])
    assert (tmp_path / "s" / "reference" / lab / f"{lab}.ipynb").exists()
    assert set(exp) == {"reference", "blank"}
