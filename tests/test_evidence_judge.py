"""The evidence writer (course_dist.evidence) and the trusted judge (autograder.judge) share one format."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
import torch

from autograder.judge import judge_all, judge_cell, load_evidence
from course_dist.evidence import Evidence, grading_seed


def _record(monkeypatch: pytest.MonkeyPatch, d: Path, values: dict, spec: str = "equal", **kw: float) -> None:
    monkeypatch.setenv("COURSE_EVIDENCE_DIR", str(d))
    ev = Evidence("cell_tests")
    for k, v in values.items():
        getattr(ev, spec)(k, v, **kw)


def test_equal_close_and_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ref, stu = tmp_path / "ref", tmp_path / "stu"
    _record(monkeypatch, ref, {"t": torch.ones(3)}, "close", atol=1e-5)
    _record(monkeypatch, stu, {"t": torch.ones(3) + 1e-6})
    assert judge_all(ref, stu, ["cell_tests"]) == {"cell_tests": []}
    _record(monkeypatch, stu, {"t": torch.ones(3) + 1e-3})
    (problem,) = judge_all(ref, stu, ["cell_tests"])["cell_tests"]
    assert "max |diff| 0.001" in problem and "atol 1e-05" in problem
    _record(monkeypatch, stu, {})
    assert "no evidence for 't'" in judge_all(ref, stu, ["cell_tests"])["cell_tests"][0]


def test_student_spec_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A student who records with a huge tolerance is still judged by the reference's exact spec."""
    ref, stu = tmp_path / "ref", tmp_path / "stu"
    _record(monkeypatch, ref, {"idx": [1, 2, 3]})
    _record(monkeypatch, stu, {"idx": [1, 2, 4]}, "close", atol=1e9)
    assert judge_all(ref, stu, ["cell_tests"])["cell_tests"] == [
        "idx: got [1, 2, 4], expected [1, 2, 3] (first difference at [2])"
    ]


def test_types_are_strict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ref, stu = tmp_path / "ref", tmp_path / "stu"
    _record(monkeypatch, ref, {"flag": True, "n": 3, "dt": torch.zeros(2, dtype=torch.int64)})
    _record(monkeypatch, stu, {"flag": 1, "n": 3.5, "dt": torch.zeros(2)})
    problems = judge_all(ref, stu, ["cell_tests"])["cell_tests"]
    assert len(problems) == 3, problems
    assert "dtype torch.float32 != expected torch.int64" in problems[2]


def test_pickled_code_is_never_run(tmp_path: Path) -> None:
    """Evidence with code in it (a forged file) is rejected by weights_only loading, not executed."""
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):  # noqa: ANN204
            return (Path.touch, (marker,))

    (tmp_path / "cell_tests.pt").write_bytes(pickle.dumps({"grade_id": "cell_tests", "records": Evil()}))
    loaded = load_evidence(tmp_path)
    assert isinstance(loaded["cell_tests"], ValueError) and not marker.exists()
    assert (
        "unreadable evidence"
        in judge_cell("cell_tests", {"k": {"value": 1, "spec": {"cmp": "equal"}}}, loaded["cell_tests"])[0]
    )


def test_bad_values_and_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COURSE_EVIDENCE_DIR", raising=False)
    ev = Evidence("x")
    with pytest.raises(ValueError, match="unsupported type object"):
        ev.equal("k", object())
    with pytest.raises(ValueError, match="atol must be a finite number >= 0, got -1"):
        ev.close("k", 1.0, atol=-1)
    with pytest.raises(ValueError, match="grade_id must match"):
        Evidence("no spaces")
    monkeypatch.setenv("COURSE_GRADE_SEED", "17")
    assert grading_seed() == 17
    monkeypatch.setenv("COURSE_GRADE_SEED", "x")
    with pytest.raises(ValueError, match="'x' is not an integer seed"):
        grading_seed()
