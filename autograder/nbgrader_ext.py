"""nbgrader configuration for this course, and the one preprocessor we add (stubs that name their task).

Everything nbgrader-specific lives here so release/grade share one config: the course directory, the stub
text,
the execution limits, and restoring deleted test cells (``OverwriteCells.add_missing_cells``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Dict, Unicode
from traitlets.config import Config

from autograder.config import CourseConfig

STUB_TOKEN = "@@COURSE_TASK@@"
STDERR_ANY = r"(?s)^"  # matches every stderr text


def ensure_bin_on_path() -> None:
    """nbgrader runs ``alembic`` by bare name (measured): put this interpreter's bin/ first on PATH."""
    bindir = str(Path(sys.executable).parent)
    if os.environ.get("PATH", "").split(os.pathsep)[0] != bindir:
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")


ensure_bin_on_path()


class NameStubs(NbGraderPreprocessor):
    """Replace the generic stub token with the task's name (runs right after ClearSolutions).

    nbgrader's ``code_stub`` is one string per language; students (and the CS336 convention) want the stub
    to say
    which task it is: ``raise NotImplementedError("lab02: implement sampler_solution ...")``.
    """

    exercise_of = Dict({}, help="grade_id of an answer cell -> rubric exercise id (for the hint id)").tag(
        config=True
    )
    token = Unicode(STUB_TOKEN).tag(config=True)

    def preprocess_cell(self, cell, resources, index):  # noqa: ANN001, ANN201 - nbconvert signature
        if cell.cell_type == "code" and self.token in cell.source:
            lab = resources.get("nbgrader", {}).get("assignment", "lab")
            gid = cell.metadata.get("nbgrader", {}).get("grade_id", f"cell{index}")
            ex = self.exercise_of.get(gid)
            hint = f"; hint('{lab}.{ex}') shows a hint" if ex else ""
            cell.source = cell.source.replace(self.token, f"{lab}: implement {gid}{hint}")
        return cell, resources


def nbgrader_config(
    cfg: CourseConfig, *, db_path: Path | None = None, exercise_of: dict | None = None
) -> Config:
    """The traitlets Config used for every nbgrader call (generate_assignment, autograde, feedback)."""
    c = Config()
    c.CourseDirectory.root = str(cfg.nbgrader_root)
    c.CourseDirectory.db_url = f"sqlite:///{db_path or cfg.gradebook}"
    c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "*.egg-info", ".pytest_cache"]
    c.ClearSolutions.code_stub = {"python": f'# YOUR CODE HERE\nraise NotImplementedError("{STUB_TOKEN}")'}
    c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
    c.NameStubs.exercise_of = dict(exercise_of or {})
    from nbgrader.converters.generate_assignment import GenerateAssignment
    from nbgrader.preprocessors import ClearSolutions

    pps = list(GenerateAssignment.class_traits()["preprocessors"].make_dynamic_default())

    pps.insert(pps.index(ClearSolutions) + 1, NameStubs)
    c.GenerateAssignment.preprocessors = pps
    # Grading: restore deleted test cells (else deleting a failing test "passes" it), per-cell limit.
    c.OverwriteCells.add_missing_cells = True
    c.Execute.timeout = int(cfg.cell_timeout)
    c.Execute.interrupt_on_timeout = True
    c.Execute.startup_timeout = 120
    c.Execute.execute_retries = 0
    c.Autograde.create_student = True
    if not cfg.stderr_fails:
        # a test cell fails iff it raises: drop its stderr before nbgrader scores it (see
        # CourseConfig.stderr_fails)
        c.IgnorePattern.enabled = True
        c.IgnorePattern.pattern = STDERR_ANY
    # Feedback shows hidden tests by design (measured.md); the release never does.
    return c


def capture(app) -> dict:  # noqa: ANN001 - an nbgrader converter
    """Run an nbgrader converter, returning {success, log, error} like NbGraderAPI does (no exchange
    set-up)."""
    from nbgrader.apps.api import capture_log

    return capture_log(app)
