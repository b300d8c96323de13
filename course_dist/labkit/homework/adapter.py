"""The one adapter that decides which trainer package is graded, and package mutants.

:func:`package` imports ``$HW_PACKAGE`` (default ``homework``, the student's; the grader submits the reference
``fttrainer`` as ``homework/`` too) with ``$HW_PACKAGE_DIR`` first on ``sys.path``. :func:`apply_mutant`
makes a copy of the reference package with a mutant's body appended to one module (DESIGN.md, "Homework").
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


def package_root(pkg: ModuleType) -> Path:
    """The folder that holds the package (what goes on PYTHONPATH)."""
    return Path(pkg.__file__).resolve().parent.parent  # type: ignore[arg-type]


def apply_mutant(mutant: str | Path, reference: str | Path, dest: str | Path) -> Path:
    """Copy the reference package folder ``reference`` into ``dest`` and append the mutant's body to the
    module named by its header (``# replaces: fttrainer/<module>.py ...``). Returns the copied package folder.

    Appending re-binds the replaced name at module level after the original definition, so every caller - in
    that
    module or importing it - gets the mutant."""
    text = Path(mutant).read_text()
    m = re.search(r"^#\s*replaces:\s*([\w./-]+\.py)", text, re.M)
    if not m:
        raise ValueError(f"{mutant}: header has no '# replaces: <package>/<module>.py' line")
    rel = Path(m.group(1))
    ref = Path(reference)
    target = Path(dest) / ref.name
    shutil.copytree(ref, target, ignore=shutil.ignore_patterns("__pycache__"))
    module = Path(dest) / rel
    if not module.exists():
        raise ValueError(f"{mutant}: replaces {rel}, which is not in {ref}")
    module.write_text(module.read_text() + "\n\n# ---- mutant " + Path(mutant).stem + " ----\n" + text)
    return target
