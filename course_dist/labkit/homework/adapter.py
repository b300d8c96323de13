"""The one adapter that decides which trainer package is graded, and package mutants.

:func:`package` imports ``$HW_PACKAGE`` (default ``homework``, the student's; the grader submits the reference
``fttrainer`` as ``homework/`` too) with ``$HW_PACKAGE_DIR`` first on ``sys.path``. :func:`apply_mutant`
makes a copy of the reference package with a mutant's edits applied to one module (DESIGN.md, "Mutants").
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import sys
from pathlib import Path
from types import ModuleType


def package_name() -> str:
    # No guessing from folder names (a submitted ``fttrainer/`` must not be graded as the reference):
    # the grader submits every package, the reference included, as ``homework/`` beside the notebook.
    return os.environ.get("HW_PACKAGE") or "homework"


def package() -> ModuleType:
    """Import the graded trainer package (the adapter: the only place that decides which one)."""
    name = package_name()
    extra = os.environ.get("HW_PACKAGE_DIR")
    if not extra and Path(name, "__init__.py").is_file():
        extra = os.getcwd()  # the submission's own package beside the notebook (nbgrader runs cells there)
    if extra:
        # an absolute path, first: ranks and workers inherit sys.path, and the repo's skeleton ``homework``
        # (on sys.path through the venv) must never shadow the submitted package of the same name
        extra = str(Path(extra).resolve())
        if extra in sys.path:
            sys.path.remove(extra)
        sys.path.insert(0, extra)
    return importlib.import_module(name)


#: the report's exercise order (rubric ids): the first unfinished one is where a student starts
TASK_ORDER = ("ddp", "sampler", "state", "atomic", "recovery", "elastic", "metrics", "scaling")
_STUB = re.compile(r'NotImplementedError\(\s*((?:"[^"\n]*"\s*)+)\)')


def first_unfinished(pkg: ModuleType) -> str | None:
    """The message of the first skeleton stub still in ``pkg`` (``"homework task ddp: implement ..."``), in
    the report's exercise order; None when none is left. Reads the package's source text, runs nothing."""
    found: dict[str, str] = {}
    for f in sorted(Path(pkg.__file__).resolve().parent.glob("*.py")):  # type: ignore[arg-type]
        for m in _STUB.finditer(f.read_text(encoding="utf-8")):
            msg = "".join(re.findall(r'"([^"\n]*)"', m.group(1)))
            task = re.match(r"homework task (\w+):", msg)
            if task:
                found.setdefault(task.group(1), msg)
    return next((found[t] for t in TASK_ORDER if t in found), next(iter(found.values()), None))


def package_root(pkg: ModuleType) -> Path:
    """The folder that holds the package (what goes on PYTHONPATH)."""
    return Path(pkg.__file__).resolve().parent.parent  # type: ignore[arg-type]


def apply_mutant(mutant: str | Path, reference: str | Path, dest: str | Path) -> Path:
    """Copy the reference package folder ``reference`` into ``dest`` and apply the mutant's find/replace
    edits to the module its header names (``# replaces: fttrainer/<module>.py``), written over the copy.
    Returns the copied package folder.

    The edit format is the grader's (:mod:`autograder.mutants`): this runs where the grader runs (tests, an
    instructor's checkout), never inside a student's kernel."""
    from autograder.mutants import apply_edits, read_mutant

    header, edits = read_mutant(Path(mutant))
    rel = Path(header["replaces"])
    if rel.suffix != ".py":
        raise ValueError(f"{mutant}: replaces {header['replaces']!r}, not a '<package>/<module>.py'")
    ref = Path(reference)
    source = ref.parent / rel
    if not source.is_file():
        raise ValueError(f"{mutant}: replaces {rel}, which is not in {ref}")
    target = Path(dest) / ref.name
    shutil.copytree(ref, target, ignore=shutil.ignore_patterns("__pycache__"))
    text = apply_edits(source.read_text(encoding="utf-8"), edits, str(mutant), str(rel))
    (Path(dest) / rel).write_text(text, encoding="utf-8")
    return target
