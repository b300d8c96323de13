"""Shared fixtures: a released copy of the grader's own fixture course (fixlab) in a temp dir."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest

from autograder.config import CourseConfig

FIXTURE = Path(__file__).parent / "fixtures" / "course"


@pytest.fixture(scope="session")
def fixlab_course(tmp_path_factory: pytest.TempPathFactory) -> CourseConfig:
    """fixlab released into a temp course tree (the real release code path; labs/ is the temp one)."""
    from autograder.release import release

    root = tmp_path_factory.mktemp("fixcourse")
    shutil.copytree(FIXTURE, root, dirs_exist_ok=True)
    # Generous limits: CI boxes with 2 busy cores start a forkserver (torch import) slowly. The launcher's
    # timeout (25 s) sits below the cell timeout (45 s) so a hung rank is reported by the launcher.
    cfg = CourseConfig(
        root=root,
        workers=2,
        cell_timeout=45,
        notebook_timeout=150,
        kernel_env=(("FIXLAB_LAUNCH_TIMEOUT", "25"),),
    )
    release(cfg)
    return cfg


def write_submission(root: Path, student: str, lab: str, nb: nbformat.NotebookNode) -> Path:
    path = root / student / lab / f"{lab}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path
