"""A mutant whose anchor no longer matches the reference (the reference was edited) stops `mutants` and
`course` before anything runs, with the file named; nothing is graded half way."""

from __future__ import annotations

import shutil
from pathlib import Path

from autograder.__main__ import main
from autograder.config import CourseConfig
from autograder.mutants import checked_problems

REPO = Path(__file__).resolve().parents[2]


def _course(tmp: Path) -> Path:
    root = tmp / "course"
    shutil.copytree(REPO / "solutions" / "lab02", root / "solutions" / "lab02")
    shutil.copytree(REPO / "autograder" / "rubric", root / "autograder" / "rubric")
    shutil.copytree(REPO / "autograder" / "mutants" / "lab02", root / "autograder" / "mutants" / "lab02")
    return root


def test_the_course_mutants_all_apply() -> None:
    cfg = CourseConfig()
    assert checked_problems(cfg, cfg.lab_ids()) == []


def test_stale_anchor_is_named_and_stops_the_run(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    root = _course(tmp_path)
    m = sorted((root / "autograder" / "mutants" / "lab02").glob("*.py"))[0]
    text = m.read_text()
    # the reference line a '-' line finds is edited away: the hunk no longer applies
    minus = next(line for line in text.splitlines() if line.startswith("-") and line[1:].strip())
    src = root / "solutions" / "lab02" / "lab02.py"
    src.write_text(src.read_text().replace(minus[1:], minus[1:] + "  # edited", 1))
    problems = checked_problems(CourseConfig(root=root), ["lab02"])
    assert problems and any(m.name in p for p in problems), problems  # others sharing the line too
    assert main(["--root", str(root), "mutants", "--lab", "lab02"]) == 2
    err = capsys.readouterr().err
    assert m.name in err and "fix or delete" in err, err
