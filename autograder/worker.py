"""The grading worker: nbgrader autograde + feedback through nbgrader's Python API, many submissions each.

Why a long-lived process: importing nbgrader and building its apps costs ~5 s (measured; more than a small
lab's execution), and the old design paid it once per submission. One worker per ``--workers`` slot grades
submission after submission; isolation stays per submission: each runs in its own kernel (its own sandbox when
the grader has one), against its own copy of the gradebook, with its own process token. nbgrader aborts a
whole run on one bad notebook (measured), so one Autograde call still grades exactly one submission.

Protocol (internal; :class:`WorkerClient` is the other end)::

    python -m autograder.worker --serve      # stdin: one spec.json path per line; writes each spec["result"]

The parent never trusts the worker to survive: it polls for the result file (written atomically), notices a
dead worker by its exit status, and kills the worker's tree on the per-submission cap.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path

from autograder.config import CourseConfig
from autograder.feedback import _pending_manual, annotate_feedback
from autograder.rebuild import Unusable, stage_submission
from autograder.record import Record, sync_gradebook

log = logging.getLogger("autograder.worker")
READY_VAR = "COURSE_WORKER_READY"  # a path the --serve worker creates once its imports are done
SCAN_VAR = "COURSE_TAMPER_SCAN"  # "off": the static scan does not even note (the attack table runs so)


# ---- worker side -------------------------------------------------------------------------------------------
def _config_kwargs(spec: dict) -> dict:
    """The grading-contract arguments of ``nbgrader_config`` from a spec (sandbox, evidence, seed)."""
    from autograder.sandbox import SandboxSpec

    want = {k: spec.get(k) for k in ("evidence_dir", "reference_evidence", "seed")}
    if spec.get("sandbox"):
        want["sandbox"] = SandboxSpec(**spec["sandbox"])
    return {k: v for k, v in want.items() if v is not None}


_REFERENCE: dict[tuple, str] = {}  # (lab, seed, fast, build) -> cached evidence dir, for this worker's run


def _reference(cfg: CourseConfig, lab: str, seed: int) -> str | None:
    """The reference run's evidence for (lab, seed, mode): computed here on first use, then cached on disk.

    Remembered in this process too: finding the cache means reading and hashing the source (0.2-0.5 s per
    submission, measured), and a worker lives for one grading run, whose sources do not change under it."""
    key = (lab, seed, cfg.fast, str(cfg.build))
    if key in _REFERENCE:
        return _REFERENCE[key]
    from autograder.reference import reference_evidence

    _REFERENCE[key] = str(reference_evidence(cfg, lab, seed, cfg.fast))
    return _REFERENCE[key]


def run(spec: dict) -> dict:
    """Autograde (and feedback) one submission as ``spec`` says; never raises.

    ``spec["publish_reference"]`` (``make course``'s own reference submission): the reference evidence of
    this lab and seed is not cached yet, so this sandboxed run is also the reference run - its evidence is
    published to the cache while the lock holds every other caller back (:func:`autograder.reference.
    publishing`)."""
    if spec.get("publish_reference"):
        from autograder.reference import publishing

        cfg = CourseConfig(**spec["config"])
        with publishing(cfg, spec["lab"], int(spec.get("seed", 0)), cfg.fast) as pub:
            if pub is not None:
                return _run({**spec, "reference_evidence": str(pub)}, publish_to=str(pub))
    return _run(spec)


def _run(spec: dict, publish_to: str = "") -> dict:
    from nbgrader.api import Gradebook, MissingEntry
    from nbgrader.converters import Autograde, GenerateFeedback
    from nbgrader.coursedir import CourseDirectory

    from autograder.nbgrader_ext import capture, nbgrader_config

    cfg = CourseConfig(**spec["config"])
    student, lab, db = spec["student"], spec["lab"], Path(spec["db"])
    # The kernel inherits this process's environment: the submission's token (so every process it starts can
    # be found and killed), fast mode and the grading seed. Set per submission, never at worker start.
    os.environ.update(spec.get("env", {}))
    out: dict = {"student": student, "lab": lab}
    t0 = time.monotonic()
    if spec.get("reference_evidence") is None:
        spec = {**spec, "reference_evidence": _reference(cfg, lab, int(spec.get("seed", 0)))}
        out["reference_s"] = time.monotonic() - t0
    t0 = time.monotonic()
    # What runs is the release with the student's answer cells (autograder.rebuild), staged beside this
    # submission's gradebook copy; the answer cells' text is scanned for tampering before anything runs.
    staged = db.parent / "submitted"
    try:
        notes, withheld, findings = stage_submission(
            cfg, lab, Path(spec["submitted"]) / student / lab, staged / student / lab
        )
    except Unusable as exc:
        return {**out, "success": False, "log": "", "error": f"submission not graded: {exc}"}
    c = nbgrader_config(cfg, db_path=db, **_config_kwargs(spec))
    if _split(cfg, lab, c):
        # Issue 32: the answer cells run in their own process, so nothing they do reaches what measures or
        # decides; the scan only points a reviewer at lines worth reading and withholds nothing.
        if findings and os.environ.get(SCAN_VAR, "on") != "off":
            notes.append("for a reviewer (nothing withheld): " + "; ".join(str(f) for f in findings))
        withheld, findings = {}, []
    if spec.get("review_cleared") and findings:
        # the instructor read these lines and cleared them: recorded, nothing withheld
        notes.append("tamper findings cleared by the instructor: " + "; ".join(str(f) for f in findings))
        withheld, findings = {}, []
    out["notes"], out["review"] = notes, [str(f) for f in findings]
    c.JudgeEvidence.publish_to = publish_to
    c.JudgeEvidence.withheld = withheld
    record_path = db.parent / "record.json"
    record_path.unlink(missing_ok=True)  # a previous attempt's record must not stand for this one
    c.JudgeEvidence.record_to = str(record_path)
    c.CourseDirectory.submitted_directory = str(staged)  # <staged>/<student>/<lab>/<lab>.ipynb
    with Gradebook(f"sqlite:///{db}") as gb:  # a previous grading of this student must not leak into this one
        try:
            gb.remove_submission(lab, student)
        except MissingEntry:
            pass
    coursedir = CourseDirectory(config=c)
    coursedir.assignment_id, coursedir.student_id = lab, student
    app = Autograde(coursedir=coursedir, config=c)
    app.force, app.create_student = True, True
    res = capture(app)
    out.update(success=bool(res["success"]), log=res.get("log", ""), error=res.get("error", ""))
    out["autograde_s"] = time.monotonic() - t0
    # The verdict travels once: JudgeEvidence decided every graded cell into this record; the result carries
    # it unchanged to the parent, and the feedback below shows its points.
    record = Record.read(record_path) if out["success"] else None
    if out["success"] and record is None:
        out.update(success=False, error="the judge wrote no verdict record (nbgrader skipped the notebook?)")
    if record is not None:
        out["record"] = record.to_json()
        out["exec_s"] = record.exec_s
        sync_gradebook(db, lab, student, record)
    if spec.get("feedback", True) and out["success"]:
        t1 = time.monotonic()
        fb = GenerateFeedback(coursedir=coursedir, config=c)
        fb.force = True
        fres = capture(fb)
        out["feedback_ok"] = bool(fres["success"])
        out["feedback_log"] = "" if fres["success"] else fres.get("log", "") + fres.get("error", "")
        html_path = Path(cfg.nbgrader_root) / "feedback" / student / lab / f"{lab}.html"
        if fres["success"] and html_path.exists():
            annotate_feedback(html_path, spec.get("titles", {}), _pending_manual(db, lab, student))
        out["feedback_s"] = time.monotonic() - t1
    return out


def _split(cfg: CourseConfig, lab: str, c: object) -> bool:
    """The process boundary (issue 32) for a lab whose rubric says ``process_boundary: true``: answer cells
    run in the sandboxed student process, the trusted kernel binds only the names each exercise declares."""
    from autograder.rubrics import load_rubric
    from autograder.source import declared_names, read_source

    rp = Path(cfg.rubric) / f"{lab}.yaml"
    wanted = rp.exists() and load_rubric(rp).process_boundary
    # COURSE_PROCESS_BOUNDARY=lab01,lab02 (or "all") turns it on for labs whose rubric does not yet say so
    forced = os.environ.get("COURSE_PROCESS_BOUNDARY", "")
    wanted = wanted or forced == "all" or lab in forced.split(",")
    if not wanted or not c.SandboxedExecute.sandbox_json:
        return False
    c.SandboxedExecute.split = True
    c.SandboxedExecute.declared = declared_names(read_source(Path(cfg.solutions) / lab / f"{lab}.py"))
    return True


def _write_result(spec: dict, out: dict) -> None:
    tmp = Path(spec["result"] + ".tmp")
    tmp.write_text(json.dumps(out))
    tmp.replace(spec["result"])  # atomic: the parent never reads half a result


def _one(spec_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    try:
        out = run(spec)
    except Exception:  # a grader bug or a broken gradebook copy: a result that says so, never a hang
        out = {"success": False, "log": "", "error": traceback.format_exc()[-4000:]}
    _write_result(spec, out)


def serve(stream=sys.stdin) -> int:  # noqa: ANN001 - a text stream
    """Grade every spec path read from ``stream`` until EOF (the parent closing our stdin)."""
    t0 = time.monotonic()
    import nbgrader.converters  # noqa: F401 - imported once per worker: this is the start-up we amortize

    from autograder.procs import die_with_parent

    die_with_parent()  # a killed grader leaves no worker grading on for nobody
    ready = os.environ.get(READY_VAR)
    if ready:  # the slot waits for this before it hands out work: the start-up is no submission's time
        tmp = Path(ready + ".tmp")
        tmp.write_text(f"{time.monotonic() - t0:.3f}\n")
        tmp.replace(ready)

    for line in stream:
        if line.strip():
            _one(line.strip())
    return 0


def main(argv: list[str]) -> int:
    if argv != ["--serve"]:
        print(
            "usage: python -m autograder.worker --serve  (spec paths on stdin; internal to grade)",
            file=sys.stderr,
        )
        return 2
    return serve()


# ---- parent side -------------------------------------------------------------------------------------------
def describe_exit(returncode: int, seconds: float) -> str:
    """'killed by SIGKILL after 8 s' / 'exited with status 3 after 8 s'."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"killed by {name} after {seconds:.0f} s"
    return f"exited with status {returncode} after {seconds:.0f} s"


class WorkerClient:
    """One grading slot: a long-lived worker process (restarted after a death or a timeout)."""

    def __init__(self, env: dict[str, str], cwd: Path, log_path: Path) -> None:
        self.env, self.cwd, self.log_path = env, cwd, log_path
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 120.0) -> float:
        """Start the long-lived worker now and wait for its imports (serve mode): the slot's one-time
        start-up, paid before its first submission's clock starts (every slot's at once). Returns its
        seconds; a worker that dies or is not ready in ``timeout`` is left to :meth:`grade`'s restart path."""
        t0 = time.monotonic()
        ready = self.env.get(READY_VAR)
        if not ready:
            return 0.0
        Path(ready).unlink(missing_ok=True)
        self.proc = self._start()
        while not Path(ready).exists() and self.proc.poll() is None and time.monotonic() - t0 < timeout:
            time.sleep(0.05)
        return time.monotonic() - t0

    def _start(self) -> subprocess.Popen:
        logf = open(self.log_path, "ab")  # noqa: SIM115 - lives as long as the process
        proc = subprocess.Popen(
            [sys.executable, "-m", "autograder.worker", "--serve"],
            cwd=self.cwd,
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=logf,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: the parent's Ctrl-C does not hit the kernels
        )
        logf.close()
        return proc

    def grade(self, spec_path: Path, result_path: Path, timeout: float, token: str) -> tuple[str, str, int]:
        """Run one spec; returns (status, reason, leftovers killed). status: ok | timeout | error."""
        from autograder.procs import kill_tree

        t0 = time.monotonic()
        if self.proc is None or self.proc.poll() is not None:
            self.proc = self._start()
        try:
            self.proc.stdin.write(f"{spec_path.as_posix()}\n".encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):  # the worker died between two submissions: a fresh one
            self.proc = self._start()
            self.proc.stdin.write(f"{spec_path.as_posix()}\n".encode())
            self.proc.stdin.flush()
        status, reason = "ok", ""
        while not result_path.exists():
            rc = self.proc.poll()
            if rc is not None and not result_path.exists():
                status = "error"
                reason = f"grading worker {describe_exit(rc, time.monotonic() - t0)}"
                break
            if time.monotonic() - t0 > timeout:
                status = "timeout"
                reason = f"killed after the {timeout:.0f} s per-submission cap (whole process tree)"
                kill_tree(self.proc.pid, token)
                self.proc.wait()
                break
            time.sleep(0.05)
        leftovers = kill_tree(None, token)  # the kernel's ranks, daemons: anything carrying this token
        return status, reason, leftovers

    def close(self) -> None:
        from autograder.procs import kill_tree

        if self.proc is not None and self.proc.poll() is None:
            if self.proc.stdin:
                try:
                    self.proc.stdin.close()  # EOF: the worker returns from serve()
                except OSError:
                    pass
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                kill_tree(self.proc.pid, None)
                self.proc.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
