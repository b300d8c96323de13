"""The homework's grading cells against the reference, the untouched skeleton and every mutant.

Executes the code cells of solutions/homework/homework.py in order in a fresh interpreter (the fast stand-in
for nbgrader autograde: ``course_dist.labkit.homework.execute_cells``), in fast mode, with the package chosen
by HW_PACKAGE / HW_PACKAGE_DIR. Reference: every auto cell passes. Skeleton: every auto cell fails. Mutant:
exactly its own exercise's auto cells fail.

    .venv/bin/python -m pytest tests/test_homework_grading.py -m slow -q     # ~5 min per variant on 2 cores
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from course_dist.labkit import homework as kit

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "solutions" / "homework" / "homework.py"
REF_PKG = ROOT / "solutions" / "homework" / "fttrainer"
MUTANTS = sorted((ROOT / "autograder" / "mutants" / "homework").glob("*.py"))
RUBRIC = yaml.safe_load((ROOT / "autograder" / "rubric" / "homework.yaml").read_text())
AUTO = {
    c["grade_id"]: ex["id"] for ex in RUBRIC["exercises"] for c in ex["graded_cells"] if c["kind"] == "auto"
}

pytestmark = pytest.mark.slow


def _grade(env: dict[str, str], cwd: Path) -> dict[str, dict]:
    return kit.execute_cells(SOURCE, {"COURSE_FAST": "1", **env}, timeout=1200, cwd=cwd)


def _fmt(results: dict[str, dict]) -> str:
    return "\n".join(f"{k}: {'ok' if v['ok'] else 'FAIL ' + v['error'][-400:]}" for k, v in results.items())


@pytest.mark.timeout(1300)
def test_reference_scores_every_auto_point(tmp_path):
    res = _grade({"HW_PACKAGE": "fttrainer", "HW_PACKAGE_DIR": str(REF_PKG.parent)}, tmp_path)
    failed = [g for g in AUTO if not res.get(g, {}).get("ok")]
    assert not failed, _fmt(res)


@pytest.mark.timeout(1300)
def test_skeleton_scores_zero(tmp_path):
    res = _grade({"HW_PACKAGE": "homework", "HW_PACKAGE_DIR": str(ROOT)}, tmp_path)
    passed = [g for g in AUTO if res.get(g, {}).get("ok")]
    assert not passed, _fmt(res)
    for g in AUTO:
        assert res[g]["ok"] is False


@pytest.mark.timeout(1300)
@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda p: p.stem)
def test_mutant_loses_exactly_its_exercise(mutant, tmp_path):
    exercise = next(
        ln.split(":", 1)[1].strip() for ln in mutant.read_text().splitlines() if ln.startswith("# exercise:")
    )
    pkg_dir = tmp_path / "pkg"
    kit.apply_mutant(mutant, REF_PKG, pkg_dir)
    res = _grade({"HW_PACKAGE": "fttrainer", "HW_PACKAGE_DIR": str(pkg_dir)}, tmp_path)
    own = [g for g, ex in AUTO.items() if ex == exercise]
    others = [g for g, ex in AUTO.items() if ex != exercise]
    assert all(not res[g]["ok"] for g in own), f"mutant {mutant.stem} passes its own exercise:\n{_fmt(res)}"
    broken = [g for g in others if not res[g]["ok"]]
    assert not broken, f"mutant {mutant.stem} also fails {broken}:\n{_fmt(res)}"
