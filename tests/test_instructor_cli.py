"""Issue 35: bad instructor input gets one clear line (never a traceback), and `student-repo` is safe to run:
it refuses a folder inside the course repository, names what `--force` deletes (a `.venv/`, a `work/`)
before deleting it, prints publish commands that work as printed, and gives students an environment without
nbgrader's instructor tools."""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path

import pytest

from autograder.__main__ import main
from autograder.config import CourseConfig
from autograder.student_repo import REMOTE_PLACEHOLDER, build_student_repo, publish_commands

CFG = CourseConfig()
ROOT = CFG.root
GIT_ENV = {
    "GIT_AUTHOR_NAME": "cli test",
    "GIT_AUTHOR_EMAIL": "cli@test",
    "GIT_COMMITTER_NAME": "cli test",
    "GIT_COMMITTER_EMAIL": "cli@test",
}


def _one_line(capsys, argv: list[str], *want: str) -> str:  # noqa: ANN001
    rc = main(argv)
    err = capsys.readouterr().err.strip()
    assert rc == 2, f"{argv}: exit {rc}, expected 2; stderr:\n{err}"
    assert len(err.splitlines()) == 1 and "Traceback" not in err, f"{argv}: not one line:\n{err}"
    missing = [w for w in want if w not in err]
    assert not missing, f"{argv}: the line lacks {missing}: {err}"
    return err


def test_grade_with_wrong_arguments_says_one_line(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    _one_line(capsys, ["grade", str(tmp_path / "nowhere")], "grade: ", "nowhere")
    (tmp_path / "alice" / "lab02").mkdir(parents=True)
    _one_line(capsys, ["grade", str(tmp_path), "--lab", "lab99"], "grade: ", "lab99", "lab02")
    _one_line(capsys, ["grade", str(tmp_path), "--student", "zed"], "grade: ", "--student zed", "alice")


def test_merge_with_wrong_arguments_says_one_line(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    _one_line(capsys, ["merge", str(tmp_path)], "merge: ", "is not a shard directory")
    _one_line(capsys, ["merge", str(tmp_path / "none-of-4")], "merge: ", "none-of-4")


def test_student_repo_refuses_a_folder_inside_the_course_repository(capsys) -> None:  # noqa: ANN001
    inside = ROOT / "build" / "student-copy"
    assert main(["student-repo", str(inside)]) == 2
    err = capsys.readouterr().err
    assert "inside the course repository" in err and len(err.strip().splitlines()) == 1, err
    assert not inside.exists(), f"{inside} was written"


def test_force_names_what_it_deletes_first(tmp_path: Path, caplog) -> None:  # noqa: ANN001
    dest = tmp_path / "course"
    build_student_repo(CFG, dest)
    (dest / ".venv" / "bin").mkdir(parents=True)
    (dest / "work" / "lab02").mkdir(parents=True)
    (dest / "work" / "lab02" / "lab02.ipynb").write_text("{}")
    with caplog.at_level(logging.WARNING, logger="autograder.student_repo"):
        build_student_repo(CFG, dest, force=True)
    said = " ".join(r.getMessage() for r in caplog.records)
    for want in (".venv/", "work/", "labs/", "a student's own notebooks", str(dest)):
        assert want in said, f"--force did not name {want!r} before deleting; it said: {said}"
    assert not (dest / "work").exists() and (dest / "Makefile").exists()


def _sh(script: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, **GIT_ENV}
    r = subprocess.run(["bash", "-ec", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"{script}\nexited {r.returncode}:\n{r.stdout}\n{r.stderr}"
    return r


def test_publish_commands_work_as_printed(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    """What `student-repo` prints, run with the placeholder replaced by a (bare, local) remote: the students'
    clone has the release; the update printed after a second `--force` build pushes the change."""
    dest, remote = tmp_path / "course-student", tmp_path / "students.git"
    _sh(f"git init -q --bare -b main {remote}", tmp_path)
    assert main(["student-repo", str(dest)]) == 0
    printed = capsys.readouterr().out
    cmds = printed.split("publish it:\n", 1)[1]
    assert cmds == publish_commands(dest) and REMOTE_PLACEHOLDER in cmds, printed
    _sh(cmds.replace(REMOTE_PLACEHOLDER, str(remote)), tmp_path)
    _sh(f"git clone -q {remote} clone", tmp_path)
    assert (tmp_path / "clone" / "labs" / "lab02" / "lab02.ipynb").is_file()

    (dest / "README.md").write_text((dest / "README.md").read_text())  # an update: same tree, rebuilt
    assert main(["student-repo", str(dest), "--force"]) == 0
    update = capsys.readouterr().out.split("publish it:\n", 1)[1]
    assert "git push origin" in update and REMOTE_PLACEHOLDER not in update, update
    (dest / "NEWS.md").write_text("lab06 released\n")  # what a real update brings: a change to commit
    _sh(update, tmp_path)
    _sh("git pull -q", tmp_path / "clone")
    assert (tmp_path / "clone" / "NEWS.md").is_file(), "the printed update did not reach the students' clone"


def test_student_environment_has_no_nbgrader(tmp_path: Path) -> None:
    dest = tmp_path / "course"
    build_student_repo(CFG, dest)
    for name in ("requirements.txt", "environment.yml"):
        text = (dest / name).read_text()
        assert "nbgrader" not in text.lower(), f"the student's {name} installs nbgrader:\n{text}"
        assert "torch==2.13.0" in text and "jupyterlab==" in text, text
    r = subprocess.run(["make", "-n", "venv"], cwd=dest, capture_output=True, text=True, timeout=60)
    assert "-r requirements.txt" in r.stdout, r.stdout


@pytest.mark.parametrize("cmd", ["grade", "merge"])
def test_help_still_parses(cmd: str, capsys) -> None:  # noqa: ANN001
    with pytest.raises(SystemExit) as e:
        main([cmd, "--help"])
    assert e.value.code == 0 and "example" in capsys.readouterr().out
