"""``make release``: solutions/<lab>/<lab>.py -> nbgrader source -> generate_assignment -> labs/<lab>/.

Single process::

    python -m autograder release            # every lab with a notebook source
    python -m autograder release --lab lab02

Deterministic: stable cell ids, no outputs or execution counts, sorted JSON keys, so an unchanged source gives
byte-identical ``labs/`` (tests/test_pipeline_release.py regenerates into a temp dir and compares).
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import nbformat

from autograder.config import CourseConfig
from autograder.rubrics import load_rubric
from autograder.source import read_source

log = logging.getLogger("autograder.release")

SKIP_FILES = {"__pycache__", ".ipynb_checkpoints", ".pytest_cache"}


def header_markdown(lab: str) -> str:
    return (
        f"> **Generated file — do not edit.** Built from `solutions/{lab}/{lab}.py` by `make release` "
        "(nbgrader generate_assignment). Work in this notebook, but changes to the course go in the source.\n"
    )


def build_source_notebook(cfg: CourseConfig, lab: str) -> nbformat.NotebookNode:
    """The nbgrader *source* notebook (reference solutions and hidden tests included) with the generated
    header."""
    nb = read_source(cfg.solutions / lab / f"{lab}.py")
    header = nbformat.v4.new_markdown_cell(header_markdown(lab))
    header["id"] = "generated-header"
    nb.cells.insert(0, header)
    nb.metadata["course"] = {
        "lab": lab,
        "generated_from": f"solutions/{lab}/{lab}.py",
        "generated_by": "make release (python -m autograder release)",
        "do_not_edit": True,
    }
    return nb


def write_notebook(nb: nbformat.NotebookNode, path: Path) -> None:
    """Write with stable formatting (nbformat sorts keys, indent 1, trailing newline)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        cell.get("metadata", {}).pop("execution", None)
    nbformat.validate(nb)
    text = nbformat.writes(nb, version=4)
    path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")


def is_code(item: Path) -> bool:
    """Python files, or folders holding any: reference code (e.g. the homework's reference package) lives
    there."""
    if item.is_dir():
        return any(p.suffix in (".py", ".pyc") for p in item.rglob("*"))
    return item.suffix in (".py", ".pyc", ".so")


def _copy_extras(src_dir: Path, dst_dir: Path, skip: set[str], *, data_only: bool = False) -> None:
    for item in sorted(src_dir.iterdir()):
        if item.name in SKIP_FILES or item.name in skip or item.suffix == ".pyc":
            continue
        if data_only and is_code(item):
            log.info("not released (code): %s", item)
            continue
        target = dst_dir / item.name
        if item.is_dir():
            shutil.copytree(
                item, target, ignore=shutil.ignore_patterns(*SKIP_FILES, "*.pyc"), dirs_exist_ok=True
            )
        else:
            shutil.copy2(item, target)


def exercise_map(cfg: CourseConfig, lab: str) -> dict[str, str]:
    path = cfg.rubric / f"{lab}.yaml"
    if not path.exists():
        return {}
    return load_rubric(path).exercise_of_cell()


def generate_assignment(cfg: CourseConfig, lab: str) -> Path:
    """Build ``build/nbgrader/source/<lab>`` and run nbgrader generate_assignment; returns the release
    folder."""
    from nbgrader.converters import GenerateAssignment
    from nbgrader.coursedir import CourseDirectory

    from autograder.nbgrader_ext import capture, nbgrader_config

    src_dir = cfg.nbgrader_root / "source" / lab
    if src_dir.exists():
        shutil.rmtree(src_dir)
    src_dir.mkdir(parents=True)
    # Data beside the source travels (hints.yaml, csv, images); code does not: the .py holds the solutions and
    # a package beside it (the homework's fttrainer/) is the reference implementation.
    _copy_extras(cfg.solutions / lab, src_dir, skip={f"{lab}.py"}, data_only=True)
    write_notebook(build_source_notebook(cfg, lab), src_dir / f"{lab}.ipynb")

    c = nbgrader_config(cfg, exercise_of=exercise_map(cfg, lab))
    coursedir = CourseDirectory(config=c)
    coursedir.assignment_id = lab
    app = GenerateAssignment(coursedir=coursedir, config=c)
    app.force = True
    app.create_assignment = True
    result = capture(app)
    if not result["success"] and "because there are submissions" in result.get("log", ""):
        # nbgrader refuses to change a lab's cells once submissions exist. Sample submissions (make
        # course) are regenerated anyway: drop them and retry; real students' grades are never dropped.
        _drop_sample_submissions(cfg, lab)
        app = GenerateAssignment(coursedir=coursedir, config=c)
        app.force, app.create_assignment = True, True
        result = capture(app)
    if not result["success"]:
        raise RuntimeError(
            f"nbgrader generate_assignment failed for {lab}:\n{result.get('log', '')}\n"
            f"{result.get('error', '')}"
        )
    return cfg.nbgrader_root / "release" / lab


SAMPLE_STUDENTS = ("reference", "blank")  # plus every "mutant-*" (make course's samples)


def _drop_sample_submissions(cfg: CourseConfig, lab: str) -> None:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{cfg.gradebook}") as gb:
        students = [sub.student.id for sub in gb.find_assignment(lab).submissions]
        real = [s for s in students if s not in SAMPLE_STUDENTS and not s.startswith("mutant-")]
        if real:
            raise RuntimeError(
                f"{lab}: the cells changed but {cfg.gradebook} holds {len(real)} graded student "
                f"submission(s) ({real[:5]}...); nbgrader cannot change an assignment under them. Export "
                "the grades (build/nbgrader/grades_nbgrader.csv), then move the gradebook aside and "
                "regrade, or release into another build dir (CourseConfig(build=...))."
            )
        for student in students:
            log.info("%s: dropping sample submission %s from the gradebook (cells changed)", lab, student)
            gb.remove_submission(lab, student)


def release_lab(cfg: CourseConfig, lab: str, *, write_labs: bool = True) -> Path:
    """Release one lab; with ``write_labs`` copy it (normalized) into ``labs/<lab>/``, replacing what was
    there."""
    rel = generate_assignment(cfg, lab)
    nb_path = rel / f"{lab}.ipynb"
    nb = nbformat.read(nb_path, as_version=4)
    write_notebook(nb, nb_path)  # normalized in place: build/ release == labs/ byte for byte
    if write_labs:
        dst = cfg.labs / lab
        if dst.exists():
            shutil.rmtree(dst)
        dst.mkdir(parents=True)
        _copy_extras(rel, dst, skip=set())
        log.info("released %s -> %s", lab, dst)
        return dst
    return rel


def release(cfg: CourseConfig, labs: list[str] | None = None, *, write_labs: bool = True) -> list[str]:
    labs = labs or cfg.lab_ids()
    unknown = set(labs) - set(cfg.lab_ids())
    if unknown:
        raise ValueError(
            f"no notebook source for {sorted(unknown)} under {cfg.solutions}; have {cfg.lab_ids()}"
        )
    for lab in labs:
        release_lab(cfg, lab, write_labs=write_labs)
    return labs


def ensure_released(cfg: CourseConfig, lab: str) -> None:
    """Make sure the gradebook knows ``lab`` (grading a fresh checkout); never touches labs/."""
    from nbgrader.api import Gradebook, MissingEntry

    built = cfg.nbgrader_root / "source" / lab / f"{lab}.ipynb"
    src = cfg.solutions / lab / f"{lab}.py"
    if cfg.gradebook.exists() and built.exists() and built.stat().st_mtime >= src.stat().st_mtime:
        with Gradebook(f"sqlite:///{cfg.gradebook}") as gb:
            try:
                gb.find_assignment(lab)
                return
            except MissingEntry:
                pass
    log.info("%s: (re)building the nbgrader source and gradebook entry from %s", lab, src)
    release_lab(cfg, lab, write_labs=False)
