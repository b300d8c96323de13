"""Grading validity per lab: the reference earns every auto point and the untouched release none (full
nbgrader
autograde), and every mutant loses exactly its own exercise (exercise-level nbclient run, fast mode)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _pipeline import CFG, LABS, mutant_params

from autograder.course import auto_max, build_samples, verdict
from autograder.grade import grade
from autograder.mutant_check import check_lab_mutants
from autograder.release import release
from autograder.rubrics import load_rubric

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not LABS, reason="no lab sources under solutions/ yet")]


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    tmp = tmp_path_factory.mktemp("grading")
    cfg = CFG.with_(labs=tmp / "labs", build=tmp / "build", fast=True)
    release(cfg)
    subs = tmp / "submitted"
    for lab in LABS:
        build_samples(cfg.with_(mutants=tmp / "no-mutants"), lab, subs)  # reference + blank only
    df = grade(cfg, subs, progress=False)
    return df.set_index(["student", "lab"])


@pytest.mark.parametrize("lab", LABS)
@pytest.mark.parametrize("student", ["reference", "blank"])
def test_reference_full_blank_zero(graded, lab: str, student: str) -> None:  # noqa: ANN001
    rubric = load_rubric(CFG.rubric / f"{lab}.yaml")
    row = graded.loc[(student, lab)]
    assert verdict(row, {"kind": student}, rubric) == "ok", (row.to_dict(), auto_max(rubric))


_mutant_results: dict[str, dict[str, list[str]]] = {}


@pytest.mark.parametrize(("lab", "name"), mutant_params())
def test_mutant_loses_exactly_its_exercise(lab: str, name: str) -> None:
    if lab not in _mutant_results:  # one kernel pass per lab for all its mutants
        _mutant_results[lab] = check_lab_mutants(CFG.with_(fast=True), lab)
    problems = _mutant_results[lab].get(name)
    assert problems is not None, f"{lab}/{name} was not checked"
    assert not problems, f"{lab}/{name}:\n  " + "\n  ".join(problems)


def test_samples_path_layout(tmp_path: Path) -> None:
    """build_samples writes nbgrader's submitted layout: <root>/<student>/<lab>/<lab>.ipynb."""
    if not LABS:
        pytest.skip("no labs")
    lab = LABS[0]
    cfg = CFG.with_(labs=tmp_path / "labs", build=tmp_path / "build")
    release(cfg, [lab])
    exp = build_samples(cfg, lab, tmp_path / "s")
    assert (tmp_path / "s" / "reference" / lab / f"{lab}.ipynb").exists()
    assert {"reference", "blank"} <= set(exp)
