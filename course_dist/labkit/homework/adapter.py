"""The one adapter that decides which trainer package is graded.

:func:`package` imports ``$HW_PACKAGE`` (default ``homework``, the student's; the grader submits the reference
``fttrainer`` as ``homework/`` too) with ``$HW_PACKAGE_DIR`` first on ``sys.path``. (Applying a package
mutant is the grader's: ``autograder.mutants.apply_mutant``.)
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from pathlib import Path
from types import ModuleType


def package_name() -> str:
    # No guessing from folder names (a submitted ``fttrainer/`` must not be graded as the reference):
    # the grader submits every package, the reference included, as ``homework/`` beside the notebook.
    return os.environ.get("HW_PACKAGE") or "homework"


def package() -> ModuleType:
    """Import the graded trainer package (the adapter: the only place that decides which one). In the trusted
    kernel of a split grading run it imports nothing: the package is imported in the student process and
    this returns its stand-in (:class:`~.proxy.StudentPackage`)."""
    from course_dist import student

    name = package_name()
    if student.active():
        from .proxy import stand_in

        return stand_in(name)  # type: ignore[return-value]
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
