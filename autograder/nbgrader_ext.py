"""nbgrader configuration for this course, and the preprocessors we add.

Everything nbgrader-specific lives here so release/grade share one config: the course directory, the stub
text, the execution limits, restoring deleted test cells (``OverwriteCells.add_missing_cells``), and the
grading contract of DESIGN.md (issue 9)::

    nbgrader_config(cfg, db_path=..., sandbox=SandboxSpec(...) | None, evidence_dir=<scratch root>,
                    reference_evidence=<dir from autograder.reference.reference_evidence>, seed=<int>,
                    show_hidden_source=False) -> traitlets Config

* Autograde executes with :class:`autograder.execute.SandboxedExecute` (the kernel in bubblewrap when
  ``sandbox`` is given; its ``workdir`` is replaced per run by a scratch copy under ``evidence_dir``) with
  ``COURSE_FAST``, ``COURSE_GRADE_SEED`` and ``COURSE_EVIDENCE_DIR`` in the kernel's environment;
* :class:`JudgeEvidence` runs right after execution and decides every graded cell once, into the submission's
  verdict record (:mod:`autograder.record`): an auto-graded test cell keeps its points only if it ran clean
  and the judge passes every key the reference recorded for it; the feedback shows ``JudgeFailed: ...`` or
  ``judge: N checks passed`` in the cell;
* feedback (:class:`HideHiddenTests`) shows hidden checks by name, points and failure message, not their
  source (``show_hidden_source=True`` restores nbgrader's behaviour).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Bool, Dict, Unicode
from traitlets.config import Config

from autograder.config import CourseConfig
from autograder.verdict import HIDDEN_BEGIN, HIDDEN_END, cell_failure, cell_verdict, is_auto_test

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

    nbgrader's ``code_stub`` is one string per language; students (and the CS336 convention) want the stub to
    say which task it is: ``raise NotImplementedError("lab02: implement sampler_solution ...")``.
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


class JudgeEvidence(NbGraderPreprocessor):
    """Decide every graded cell once and write the submission's :class:`autograder.record.Record`.

    Runs in the worker (outside the sandbox) after execution, once the kernel and everything it started are
    dead, on the evidence :class:`autograder.execute.SandboxedExecute` froze as each cell replied. A test
    cell's verdict is :func:`autograder.verdict.cell_verdict` (its own error, then the judge against the
    reference run); the judge's problems also go into its outputs for the feedback, which is written from the
    record's points (:func:`autograder.record.sync_gradebook`), never the other way round.
    """

    reference_dir = Unicode(
        "", help="reference evidence directory (autograder.reference.reference_evidence)"
    ).tag(config=True)
    publish_to = Unicode(
        "",
        help="this submission is the course's own reference (make course): publish its evidence here as the "
        "reference evidence (autograder.reference.publishing holds the lock) when every test cell ran clean",
    ).tag(config=True)
    withheld = Dict(
        {}, help="grade_id of a test cell -> why its points are withheld for review (autograder.tamper)"
    ).tag(config=True)
    record_to = Unicode("", help="where the submission's verdict record (JSON) is written").tag(config=True)
    stderr_fails = Bool(
        False, help="a test cell that writes to stderr fails (CourseConfig.stderr_fails)"
    ).tag(config=True)

    def _publish(self, nb, ev_dir: str | None) -> str:  # noqa: ANN001 - a NotebookNode
        """The reference dir to judge against after publishing this run's evidence ('' if it could not be)."""
        from autograder.judge import publish

        raised = [
            c.metadata["nbgrader"]["grade_id"]
            for c in nb.cells
            if is_auto_test(c) and any(o.get("output_type") == "error" for o in c.get("outputs", []))
        ]
        if raised or not ev_dir or not Path(ev_dir).is_dir():
            # not published: every auto cell then "cannot be judged" (the reference row fails, as it must),
            # and the next caller of reference_evidence runs the reference itself
            return ""
        publish(Path(self.publish_to), Path(ev_dir), {"errors": {}, "from": "the reference submission"})
        return self.publish_to

    def _test_cell(self, cell, ref: dict, stu: dict):  # noqa: ANN001, ANN202 - a NotebookNode -> CellRecord
        from nbformat.v4 import new_output

        from autograder.record import auto_cell, cell_errors

        gid = cell.metadata["nbgrader"]["grade_id"]
        failure = cell_failure(cell, self.stderr_fails)
        errors = cell_errors(cell)
        problems = list(cell_verdict(gid, "", ref.get(gid), stu.get(gid)).problems)
        if gid in self.withheld:
            problems.insert(0, f"points withheld for review: {self.withheld[gid]}")
        # nbgrader scores a cell by its first decisive output, and an execute_result means partial credit
        # (a student's displayhook call before an error would earn full points). Verdicts are binary here:
        # results become plain displays, so the feedback's score is the record's.
        for out in cell.outputs:
            if out.get("output_type") == "execute_result":
                out["output_type"] = "display_data"
                out.pop("execution_count", None)
        if problems:
            shown = problems[:20] + ([f"... and {len(problems) - 20} more"] if len(problems) > 20 else [])
            cell.outputs.append(
                new_output(
                    "error",
                    ename="JudgeFailed",
                    evalue="; ".join(shown)[:2000],
                    traceback=[f"JudgeFailed: {p}" for p in shown],
                )
            )
        else:
            n = len(ref.get(gid) or {})
            cell.outputs.append(new_output("stream", name="stdout", text=f"judge: {n} checks passed\n"))
        points = float(cell.metadata["nbgrader"].get("points", 0))
        return auto_cell(gid, points, failure, errors, problems, len(ref.get(gid) or {}))

    def preprocess(self, nb, resources):  # noqa: ANN001, ANN201 - nbconvert signature
        import shutil

        from autograder.judge import load_evidence
        from autograder.record import Record, exec_seconds, manual_cell

        ev_dir = resources.get("course_evidence_dir")
        ref_dir = self._publish(nb, ev_dir) if self.publish_to else self.reference_dir
        ref = load_evidence(ref_dir) if ref_dir else {}
        stu = load_evidence(ev_dir) if ev_dir else {}
        # what the sandbox had to do travels in the record too (leftovers killed, wall expired, output cut)
        record = Record(sandbox=dict(resources.get("course_sandbox") or {}), exec_s=exec_seconds(nb))
        for cell in nb.cells:
            if is_auto_test(cell):
                c = self._test_cell(cell, ref, stu)
            elif ((cell.get("metadata", {}) or {}).get("nbgrader", {}) or {}).get("grade"):
                c = manual_cell(cell)
            else:
                continue
            record.cells[c.grade_id] = c
        if self.record_to:
            record.write(Path(self.record_to))
        if resources.get("course_scratch"):
            shutil.rmtree(resources["course_scratch"], ignore_errors=True)
        return nb, resources


class HideHiddenTests(NbGraderPreprocessor):
    """Feedback: a test cell's hidden region becomes one comment; tracebacks shrink to 'Name: message'.

    A traceback quotes the source lines around the failing assert, so it is cut too; the checks' names and
    failure messages (the judge's, the asserts') and the points stay.
    """

    enabled = Bool(True).tag(config=True)

    def preprocess_cell(self, cell, resources, index):  # noqa: ANN001, ANN201 - nbconvert signature
        if not is_auto_test(cell) or HIDDEN_BEGIN not in cell.source:
            return cell, resources
        lines, keep, hidden = cell.source.splitlines(), [], False
        for line in lines:
            if line.strip() == HIDDEN_BEGIN:
                hidden = True
                keep.append("# hidden tests: not shown (their names and failure messages are below)")
            elif line.strip() == HIDDEN_END:
                hidden = False
            elif not hidden:
                keep.append(line)
        cell.source = "\n".join(keep)
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                out["traceback"] = [f"{out.get('ename')}: {out.get('evalue')}"]
        return cell, resources


def nbgrader_config(
    cfg: CourseConfig,
    *,
    db_path: Path | None = None,
    exercise_of: dict | None = None,
    sandbox: object | None = None,
    evidence_dir: Path | None = None,
    reference_evidence: Path | None = None,
    seed: int = 0,
    show_hidden_source: bool = False,
) -> Config:
    """The traitlets Config used for every nbgrader call (generate_assignment, autograde, feedback).

    ``sandbox``: a :class:`autograder.sandbox.SandboxSpec` (limits and extra paths; its workdir is replaced
    per run) or None to execute without a sandbox. ``evidence_dir``: parent of the per-run scratch (the
    kernel's copy of the submission and its evidence; default: the system temp dir). ``reference_evidence``:
    the reference run's evidence for this lab, seed and mode (without it every auto cell fails the judge).
    """
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
    # Kill the kernel once the last cell has replied instead of asking it to exit (measured: 2.6 s of every
    # submission's 15-30 s). ipykernel's graceful exit SIGTERMs its children and waits for them to vanish, but
    # course_dist's private forkserver stays a zombie nobody reaps, so the wait runs into jupyter_client's
    # 2.5 s timeout. Grading needs nothing from a graceful exit: evidence is written atomically per call,
    # each cell's outputs are in by its idle status, and the sandbox's cgroup kill (unsandboxed: the token's
    # kill_tree) reaps every process the submission left.
    c.Execute.shutdown_kernel = "immediate"
    c.Autograde.create_student = True
    if not cfg.stderr_fails:
        # a test cell fails iff it raises: drop its stderr before nbgrader scores it (see
        # CourseConfig.stderr_fails)
        c.IgnorePattern.enabled = True
        c.IgnorePattern.pattern = STDERR_ANY
    # Grading contract: sandboxed execution, then the judge, before nbgrader scores anything.
    from nbconvert.preprocessors import ClearMetadataPreprocessor
    from nbgrader.converters import Autograde, GenerateFeedback
    from nbgrader.preprocessors import Execute

    from autograder.execute import SandboxedExecute

    auto = list(Autograde.class_traits()["autograde_preprocessors"].make_dynamic_default())
    auto[auto.index(Execute)] = SandboxedExecute
    auto.insert(auto.index(SandboxedExecute) + 1, JudgeEvidence)
    assert ClearMetadataPreprocessor in auto, auto
    c.Autograde.autograde_preprocessors = auto
    c.SandboxedExecute.sandbox_json = "" if sandbox is None else sandbox.to_json()
    c.SandboxedExecute.kernel_env = {**cfg.kernel_environ(), "COURSE_GRADE_SEED": str(int(seed))}
    c.SandboxedExecute.scratch_root = str(evidence_dir) if evidence_dir else ""
    # A flood of output (100 MB of prints) takes longer than nbclient's 4 s to drain after the reply: wait
    # longer, and on expiry keep grading with what arrived (the verdict comes from the reply and the judge).
    c.SandboxedExecute.iopub_timeout = 30
    c.SandboxedExecute.raise_on_iopub_timeout = False
    c.JudgeEvidence.reference_dir = str(reference_evidence) if reference_evidence else ""
    c.JudgeEvidence.stderr_fails = bool(cfg.stderr_fails)
    fb = list(GenerateFeedback.class_traits()["preprocessors"].make_dynamic_default())
    if not show_hidden_source:
        fb.insert(0, HideHiddenTests)
    c.GenerateFeedback.preprocessors = fb
    return c


def capture(app) -> dict:  # noqa: ANN001 - an nbgrader converter
    """Run an nbgrader converter, returning {success, log, error} like NbGraderAPI does (no exchange
    set-up)."""
    from nbgrader.apps.api import capture_log

    return capture_log(app)
