"""`make lab`'s working copy: made once, never overwritten by a course update; updates land beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from course_dist.workcopy import copy_lab, main


def _release(root: Path, text: str) -> Path:
    d = root / "labs" / "lab09"
    d.mkdir(parents=True, exist_ok=True)
    (d / "lab09.ipynb").write_text(text)
    (d / "hints.yaml").write_text("lab09.x: [a, b, c]\n")
    return d


def test_copy_once_then_updates_go_beside(tmp_path: Path) -> None:
    lab = _release(tmp_path, "v1")
    work = tmp_path / "work"
    assert "new working copy" in copy_lab(lab, work)
    (work / "lab09" / "lab09.ipynb").write_text("my answers")
    assert "up to date" in copy_lab(lab, work)
    _release(tmp_path, "v2")
    msg = copy_lab(lab, work)
    assert "untouched" in msg and "lab09.updated.ipynb" in msg
    assert (work / "lab09" / "lab09.ipynb").read_text() == "my answers"
    assert (work / "lab09" / "lab09.updated.ipynb").read_text() == "v2"


def test_homework_gets_its_package_beside_the_notebook(tmp_path: Path) -> None:
    lab = _release(tmp_path, "v1")
    skel = tmp_path / "homework"
    skel.mkdir()
    (skel / "__init__.py").write_text("")
    copy_lab(lab, tmp_path / "work", skel)
    assert (tmp_path / "work" / "lab09" / "homework" / "__init__.py").exists()


def test_errors_say_what_to_do(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        main(["--labs", str(tmp_path / "nope"), "--work", str(tmp_path / "w")])
    assert "make release" in capsys.readouterr().err
    _release(tmp_path, "v1")
    with pytest.raises(SystemExit):
        main(["--labs", str(tmp_path / "labs"), "--work", str(tmp_path / "w"), "--lab", "lab99"])
    assert "unknown lab(s) ['lab99']" in capsys.readouterr().err
    (tmp_path / "labs" / "empty").mkdir()
    with pytest.raises(ValueError, match="has no empty.ipynb: run `make release`"):
        copy_lab(tmp_path / "labs" / "empty", tmp_path / "w")
