"""Known-wrong answers (``autograder/mutants/<lab>/<name>.py``) and the sample submissions built from them.

Header (DESIGN.md)::

    # mutant: forgot_average
    # exercise: allreduce            (the ONLY rubric exercise whose auto points it must lose)
    # replaces: allreduce_solution   (grade_id of the answer cell whose source this file replaces)
    # why: sums gradients across ranks but never divides by world size
    # hidden-only: <why>             (optional: the visible tests cannot catch it, e.g. a seed-dependent case)
    <the complete replacement source of that cell>

Without ``hidden-only`` a mutant must fail the *visible* part of its own exercise's tests (DESIGN.md,
"Honest visible tests"); :mod:`autograder.mutant_check` checks that.

``check_mutant`` is the fast, exercise-level check used by the test suite: swap the cell into the reference
(instructor) notebook, execute it in fast mode with nbclient, continue on errors, and record pass/fail of
every
graded cell up to the next exercise's tests.
"""

from __future__ import annotations

import copy
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path

import nbformat

from autograder.config import CourseConfig
from autograder.source import grade_id, nbgrader_meta

log = logging.getLogger("autograder.mutants")
HEADER_KEYS = ("mutant", "exercise", "replaces", "why")
OPTIONAL_KEYS = ("hidden-only",)


@dataclass(frozen=True)
class Mutant:
    lab: str
    name: str
    exercise: str
    replaces: str
    why: str
    source: str
    path: Path
    hidden_only: str = ""  # why the visible tests cannot catch it ("" = they must)

    @property
    def is_file_mutant(self) -> bool:
        """True when ``replaces`` names a file beside the source (e.g. the homework's
        ``fttrainer/sampler.py``):
        the body is then APPENDED to that module (re-binding a function), instead of replacing a cell."""
        return "/" in self.replaces or self.replaces.endswith(".py")


def parse_mutant(path: Path, lab: str) -> Mutant:
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    header: dict[str, str] = {}
    body_start = 0
    for i, line in enumerate(lines):
        s = line.strip()
        key = s[1:].split(":", 1)[0].strip() if s.startswith("#") and ":" in s else None
        if key in HEADER_KEYS + OPTIONAL_KEYS and key not in header:
            free_text = key in ("why", "hidden-only")
            header[key] = (
                s.split(":", 1)[1].strip() if free_text else s.split(":", 1)[1].split("(", 1)[0].strip()
            )
            body_start = i + 1
        elif header:
            break
    missing = [k for k in HEADER_KEYS if not header.get(k)]
    if missing:
        raise ValueError(
            f"{path}: mutant header lacks {missing}; expected lines '# mutant: ...', '# exercise: ...', "
            "'# replaces: <grade_id>', '# why: ...' at the top"
        )
    body = "\n".join(lines[body_start:]).strip("\n")
    if not body.strip():
        raise ValueError(f"{path}: no replacement source after the header")
    if "hidden-only" in header and not header["hidden-only"]:
        raise ValueError(f"{path}: '# hidden-only:' needs a reason (why the visible tests cannot catch it)")
    return Mutant(
        lab,
        header["mutant"],
        header["exercise"],
        header["replaces"],
        header["why"],
        body,
        Path(path),
        header.get("hidden-only", ""),
    )


def find_mutants(cfg: CourseConfig, lab: str) -> list[Mutant]:
    d = cfg.mutants / lab
    return [parse_mutant(p, lab) for p in sorted(d.glob("*.py"))] if d.is_dir() else []


def source_notebook(cfg: CourseConfig, lab: str) -> nbformat.NotebookNode:
    """The instructor notebook (reference solutions + hidden tests), as release builds it."""
    from autograder.release import build_source_notebook

    return build_source_notebook(cfg, lab)


def release_notebook(cfg: CourseConfig, lab: str) -> nbformat.NotebookNode:
    return nbformat.read(cfg.nbgrader_root / "release" / lab / f"{lab}.ipynb", as_version=4)


def replace_cell(nb: nbformat.NotebookNode, gid: str, source: str) -> nbformat.NotebookNode:
    nb = copy.deepcopy(nb)
    hits = [c for c in nb.cells if grade_id(c) == gid]
    if len(hits) != 1:
        raise KeyError(f"expected one cell with grade_id {gid!r}, found {len(hits)}")
    hits[0].source = source
    return nb


def reference_submission(cfg: CourseConfig, lab: str) -> nbformat.NotebookNode:
    """The release with every answer cell filled in from the reference: what a perfect student submits."""
    sub = release_notebook(cfg, lab)
    ref = {grade_id(c): c.source for c in source_notebook(cfg, lab).cells if nbgrader_meta(c).get("solution")}
    for cell in sub.cells:
        if nbgrader_meta(cell).get("solution"):
            cell.source = ref[grade_id(cell)]
    return sub


def mutant_submission(cfg: CourseConfig, m: Mutant) -> nbformat.NotebookNode:
    """The notebook of a mutant sample (a file mutant's notebook is the reference; see
    :func:`apply_file_mutant`)."""
    if m.is_file_mutant:
        return reference_submission(cfg, m.lab)
    return replace_cell(reference_submission(cfg, m.lab), m.replaces, m.source)


def copy_extras(cfg: CourseConfig, lab: str, dest: Path, m: Mutant | None = None) -> None:
    """Files beside the source (a reference package, data) into ``dest``, folders renamed as the rubric's
    ``submit_as`` says (the way a student submits them); a file mutant is appended to its target."""
    from autograder.rubrics import load_rubric

    rubric_file = cfg.rubric / f"{lab}.yaml"
    rename = load_rubric(rubric_file).submit_as if rubric_file.exists() else {}
    dest.mkdir(parents=True, exist_ok=True)
    for item in sorted((cfg.solutions / lab).iterdir()):
        if item.name in (f"{lab}.py", "__pycache__") or item.suffix == ".ipynb":
            continue
        if item.is_dir():
            shutil.copytree(
                item,
                dest / rename.get(item.name, item.name),
                ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
                dirs_exist_ok=True,
            )
        else:
            shutil.copy2(item, dest / item.name)
    if m is not None and m.is_file_mutant:
        head, _, rest = m.replaces.partition("/")
        target = dest / (f"{rename.get(head, head)}/{rest}" if rest else m.replaces)
        if not target.is_file():
            raise KeyError(f"mutant {m.name}: {m.replaces} is not a file beside solutions/{lab}/{lab}.py")
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(f"\n\n# ---- mutant {m.name} (appended by the grader) ----\n{m.source}\n")
