"""nbgrader's Execute, with the kernel in the sandbox, a scratch copy as its cwd, and an output cap.

``SandboxedExecute`` replaces nbgrader's ``Execute`` in Autograde (``nbgrader_ext.nbgrader_config``):

* the kernel's cwd is a fresh *copy* of the autograded directory under ``scratch_root`` (never the grader's
  own files: a student who writes a symlink there cannot make nbgrader write through it);
* with ``sandbox_json`` set, the kernel runs under bubblewrap
  (:class:`autograder.sandbox.SandboxedKernelManager`) seeing only that copy and the evidence directory
  writable; empty = no sandbox (``--unsafe-no-sandbox``);
* ``kernel_env`` (COURSE_FAST, COURSE_GRADE_SEED, ...) plus ``COURSE_EVIDENCE_DIR`` reach the kernel;
* a cell past the per-cell timeout is interrupted; a kernel that still does not answer ``recover_s`` later
  (a loop that swallows KeyboardInterrupt) is killed and the run stops with "kernel became unresponsive":
  otherwise every later cell would queue behind the loop and time out in turn (cells x timeout, up to the
  per-submission cap, for one student);
* outputs beyond ``output_bytes`` are dropped with one note per cell (error outputs are always kept, their
  tracebacks bounded), so 100 MB of prints cannot make a 100 MB notebook or feedback page.

* evidence is frozen per cell: the moment a test cell replies, its evidence file moves from the directory
  the kernel can write to one it cannot see, and anything else left there is deleted - a later cell cannot
  rewrite, add or plant evidence for any test cell;
* a kernel that dies (or is killed as unresponsive) ends the run, not the grade: the cells that already ran
  keep their outputs and frozen evidence, every graded cell from the dead one on gets an error output saying
  the kernel died where.

It leaves ``resources["course_evidence_dir"]`` (the frozen evidence, read by ``JudgeEvidence``) and
``resources["course_sandbox"] = {"leftovers_killed", "wall_expired", "output_dropped_bytes"}``.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from nbclient.exceptions import DeadKernelError
from nbformat.v4 import new_output
from nbgrader.preprocessors import Execute
from traitlets import Bool, Dict, Integer, Unicode

from autograder.sandbox import SandboxedKernelManager, SandboxedProcess, SandboxSpec
from autograder.verdict import is_auto_test

log = logging.getLogger("autograder.execute")
MAX_TRACEBACK_CHARS = 20_000


def _mount_tmpfs(path: Path, size: int) -> bool:
    """Mount a size-capped tmpfs at ``path`` (as root); False where the grader may not (a plain dir then).

    ``nosymfollow`` (Linux >= 5.10): the trusted kernel reads the student's files there, and a link planted
    by the student must not lead it to a file outside the sandbox; an older kernel mounts without it."""
    for opts in (f"size={size},mode=0700,nosymfollow", f"size={size},mode=0700"):
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(path)], capture_output=True)
        if r.returncode == 0:
            return True
    return False


def _size(content: dict) -> int:
    """Roughly the bytes an output adds to the notebook (cheap: no re-serialisation of a 1 MB print)."""
    if "text" in content:
        return len(content["text"])
    data = content.get("data") or {}
    return sum(len(v) if isinstance(v, str) else len(json.dumps(v, default=str)) for v in data.values()) + 64


class SandboxedExecute(Execute):
    sandbox_json = Unicode("", help="SandboxSpec JSON (workdir filled per run); empty = no sandbox").tag(
        config=True
    )
    kernel_env = Dict({}, help="environment variables for the grading kernel").tag(config=True)
    output_bytes = Integer(4 << 20, help="notebook output kept per submission (bytes)").tag(config=True)
    scratch_root = Unicode("", help="parent of the per-run scratch directory (default: system temp)").tag(
        config=True
    )
    recover_s = Integer(15, help="after a timeout's interrupt, seconds the kernel has to answer again").tag(
        config=True
    )
    split = Bool(False, help="the process boundary (issue 32): answer cells run in a sandboxed student "
                 "process, every other cell in a trusted kernel outside it").tag(config=True)
    declared = Dict({}, help="answer cell grade_id -> the names its exercise declares (split mode)").tag(
        config=True
    )

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("kernel_manager_class", SandboxedKernelManager)
        super().__init__(*args, **kwargs)
        self._spec: SandboxSpec | None = None
        self._env: dict[str, str] = {}
        self._km: SandboxedKernelManager | None = None
        self._used = 0
        self._dropped = 0
        self._noted: set[int] = set()
        self._evidence: Path | None = None  # the kernel writes here (inside the sandbox)
        self._frozen: Path | None = None  # test cells' evidence, moved here as each replies (outside it)
        self._index = -1  # the cell being executed
        self._student: SandboxedProcess | None = None  # split mode: the sandboxed student process
        self._died_noted = False
        self._hostdir: Path | None = None
        self._mounted = False
        self._sock, self._ready = "", False

    # ---- kernel -----------------------------------------------------------------------------------------
    def create_kernel_manager(self):  # noqa: ANN201 - nbclient signature
        km = super().create_kernel_manager()
        km.sandbox = self._spec
        km.extra_env = dict(self._env)
        self._km = km
        return km

    def preprocess(self, nb, resources=None, km=None):  # noqa: ANN001, ANN201 - nbconvert signature
        resources = resources if resources is not None else {}
        meta = resources.setdefault("metadata", {})
        src = meta.get("path") or "."
        if self.scratch_root:
            Path(self.scratch_root).mkdir(parents=True, exist_ok=True)
        base = Path(tempfile.mkdtemp(prefix="course-run-", dir=self.scratch_root or None))
        work, evidence, frozen = base / "work", base / "evidence", base / "frozen"
        # symlinks=True: a student's symlink is copied as a link, never followed by the grader. No notebook:
        # the one being graded has its hidden tests restored (nbgrader's OverwriteCells) by now.
        shutil.copytree(
            src, work, symlinks=True, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "*.ipynb")
        )
        evidence.mkdir()
        frozen.mkdir()
        self._evidence, self._frozen = evidence, frozen
        self._env = {**self.kernel_env, "COURSE_EVIDENCE_DIR": str(evidence)}
        if self.sandbox_json and self.split:
            # The trusted kernel runs outside the sandbox and never executes submitted text; the student
            # process runs inside it, seeing the copy and its socket directory only (no evidence directory).
            spec = json.loads(self.sandbox_json)
            # its own short directory: a unix socket's path is limited to 107 bytes
            hostdir = Path(tempfile.mkdtemp(prefix="course-s-"))
            self._hostdir = hostdir
            spec.update(workdir=str(work), writable=[str(hostdir)])
            student_spec = SandboxSpec(**spec)
            self.output_bytes = min(self.output_bytes, student_spec.output_bytes)
            self._spec = None
            self._died_noted = False
            # the notebook's shared files (course_dist.scratch_dir): both sides see them at one path; a tmpfs
            # of the sandbox's /tmp size where the grader may mount one (root), else a plain directory
            shared = hostdir / "tmp"
            shared.mkdir()
            self._mounted = _mount_tmpfs(shared, student_spec.tmp_bytes)
            self._env["COURSE_SHARED_TMPDIR"] = str(shared)
            self._env["COURSE_STUDENT_SOCKET"] = self._start_student(student_spec, hostdir, nb)
        elif self.sandbox_json:
            spec = json.loads(self.sandbox_json)
            # only the copy and the evidence directory are writable, whatever the caller's spec said
            spec.update(workdir=str(work), writable=[str(evidence)])
            self._spec = SandboxSpec(**spec)
            self.output_bytes = min(self.output_bytes, self._spec.output_bytes)
        else:
            self._spec = None
            log.warning("grading WITHOUT a sandbox: the submission can read and write the grader's files")
        self._used, self._dropped, self._noted = 0, 0, set()
        resources["course_evidence_dir"] = str(frozen)
        resources["course_scratch"] = str(base)
        meta["path"] = str(work)
        if self._student is not None:
            # the trusted kernel's working directory (first on its sys.path) must not hold the submission's
            # files: a submitted package there would be importable by the side that never runs student code
            meta["path"] = str(base / "trusted")
            (base / "trusted").mkdir()
        self._index = -1
        try:
            return super().preprocess(nb, resources, km=km)
        except DeadKernelError as exc:
            self._mark_not_run(nb, str(exc))
            return nb, resources
        finally:
            meta["path"] = src
            killed = self._km.close() if self._km is not None else 0
            if self._student is not None:
                killed += self._student.close()
            if self._hostdir is not None:
                if self._mounted:
                    subprocess.run(["umount", "-l", str(self._hostdir / "tmp")], capture_output=True)
                shutil.rmtree(self._hostdir, ignore_errors=True)
                self._hostdir = None
            resources["course_sandbox"] = {
                "leftovers_killed": killed,
                "wall_expired": bool(self._km is not None and self._km.wall_expired),
                "output_dropped_bytes": self._dropped,
                "sandboxed": self._spec is not None or self._student is not None,
                "split": self._student is not None,
            }
            self._student = None
            self._km = None
            shutil.rmtree(work, ignore_errors=True)

    # ---- the student process (split mode) ----------------------------------------------------------------
    def _start_student(self, spec: SandboxSpec, hostdir: Path, nb) -> str:  # noqa: ANN001 - a NotebookNode
        """Start ``python -m course_dist.student --host`` in the sandbox and return its socket's path at once:
        it starts (and warms up) while the trusted kernel starts and runs the set-up cells; the first answer
        cell waits for it (:meth:`_student_ready`). Its environment: the kernel's (fast mode, seed, cell
        timeout), never the evidence dir."""
        import sys

        sock = str(hostdir / "s.sock")
        env = {**os.environ, **self.kernel_env, "COURSE_SHARED_TMPDIR": self._env["COURSE_SHARED_TMPDIR"]}
        env.pop("COURSE_EVIDENCE_DIR", None)
        # what the host imports ahead of the answer cells (course_dist._student_host.warm_up): torch always,
        # the ranks' forkserver where a cell of this notebook launches (the labkit's checks do)
        launches = any(c.cell_type == "code" and ("launch" in c.source or "labkit" in c.source)
                       for c in nb.cells)
        env["COURSE_STUDENT_WARM"] = "torch,launch" if launches else "torch"
        self._student = SandboxedProcess(
            spec, [sys.executable, "-m", "course_dist.student", "--host", sock], env, str(hostdir)
        )
        self._sock, self._ready = sock, False
        return sock

    def _student_ready(self) -> None:
        """Wait until the student process listens (before its first request); raise if it did not start."""
        import time

        deadline = time.monotonic() + max(60, self.startup_timeout)
        while not os.path.exists(self._sock):
            if self._student.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the student process did not start: {self._student.tail()}")
            time.sleep(0.02)
        self._ready = True

    def _answer_stub(self, cell) -> str | None:  # noqa: ANN001 - a NotebookNode
        """Split mode: the trusted kernel's stand-in for an answer cell (the source travels as a string)."""
        meta = cell.metadata.get("nbgrader", {})
        if self._student is None or cell.cell_type != "code" or not meta.get("solution"):
            return None
        gid = meta.get("grade_id", "")
        names = list(self.declared.get(gid, []))
        return (f"__import__('course_dist.student', fromlist=['run_answer']).run_answer({gid!r}, "
                f"{cell.source!r}, {names!r})")

    # ---- evidence frozen per cell, a dead kernel ends the run --------------------------------------------
    def preprocess_cell(self, cell, resources, index):  # noqa: ANN001, ANN201 - nbconvert signature
        self._index = index
        gid = cell.metadata.get("nbgrader", {}).get("grade_id") if is_auto_test(cell) else None
        self._clear_evidence()  # nothing planted before this cell counts
        stub, source = self._answer_stub(cell), cell.source
        try:
            if stub is not None:
                cell.source = stub
                if not self._ready:
                    self._student_ready()
            return super().preprocess_cell(cell, resources, index)
        finally:
            cell.source = source
            if gid:
                self._freeze(gid)
            self._clear_evidence()
            self._student_died(cell)

    def _student_died(self, cell) -> None:  # noqa: ANN001 - a NotebookNode
        """Once, where the student process died: its last output in the cell (why, for the student)."""
        if self._student is None or self._student.alive() or self._died_noted:
            return
        self._died_noted = True
        code = self._student.proc.returncode
        cell.outputs.append(new_output("stream", name="stderr", text=(
            f"\n[grader] the student process (your answer cells and the ranks they launch) ended with status "
            f"{code} during this cell; its last output:\n{self._student.tail()}\n")))

    def _freeze(self, gid: str) -> None:
        """Move this test cell's evidence out of the kernel's reach (a rename: the file as it was at the
        reply, never re-read from where the kernel could still write)."""
        src = self._evidence / f"{gid}.pt"
        if os.path.lexists(src):
            os.replace(src, self._frozen / f"{gid}.pt")

    def _clear_evidence(self) -> None:
        for entry in os.scandir(self._evidence):
            path = Path(entry.path)
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)

    def _mark_not_run(self, nb, why: str) -> None:  # noqa: ANN001 - a NotebookNode
        """The kernel died in cell ``self._index``: that graded cell and every later one get an error output
        (so each scores 0 with the reason); the cells before keep their outputs and frozen evidence."""
        from nbformat.v4 import new_output

        died = max(self._index, 0)
        cell = nb.cells[died] if died < len(nb.cells) else None
        where = f"cell {died}" + (
            f" ({cell.metadata.get('nbgrader', {}).get('grade_id')})"
            if cell and cell.metadata.get("nbgrader", {}).get("grade_id")
            else ""
        )
        log.warning("kernel died in %s: %s", where, why)
        cause = " ".join(why.split())[:200] or "no reason given"
        for i, c in enumerate(nb.cells[died:], start=died):
            if c.cell_type != "code" or not c.metadata.get("nbgrader", {}).get("grade"):
                continue
            # the cause first: the CSV's reason keeps ~110 characters of it
            text = f"the kernel died in {where}: {cause}" + ("" if i == died else "; this cell did not run")
            c.outputs.append(
                new_output("error", ename="KernelDied", evalue=text, traceback=[f"KernelDied: {text}"])
            )

    # ---- timeouts ---------------------------------------------------------------------------------------
    async def _async_handle_timeout(self, timeout, cell=None):  # noqa: ANN001, ANN201 - nbclient signature
        if self._student is not None:  # the student's code is what runs long: interrupt it over there too
            self._student.interrupt()
        reply = await super()._async_handle_timeout(timeout, cell)  # interrupts; nbgrader's error reply
        if not await self._answers(self.recover_s):
            log.error("kernel became unresponsive after the per-cell timeout (%ss): killed", timeout)
            await self._async_shutdown_kernel_now()
            raise DeadKernelError(
                f"kernel became unresponsive after the per-cell timeout ({timeout} s) and ignored the "
                f"interrupt for {self.recover_s} s: killed"
            )
        return reply

    async def _answers(self, within: float) -> bool:
        """True if the kernel answers a kernel_info request within ``within`` s (it runs on the main thread,
        so a kernel still stuck in the timed-out cell cannot answer)."""
        import asyncio
        import time
        from queue import Empty

        from jupyter_core.utils import ensure_async

        probe = self.kc.kernel_info()
        deadline = time.monotonic() + within
        while (left := deadline - time.monotonic()) > 0:
            try:
                msg = await ensure_async(self.kc.shell_channel.get_msg(timeout=left))
            except (Empty, asyncio.TimeoutError):
                return False
            if msg.get("parent_header", {}).get("msg_id") == probe:
                return True
        return False

    async def _async_shutdown_kernel_now(self) -> None:
        from jupyter_core.utils import ensure_async

        try:
            await ensure_async(self.km.shutdown_kernel(now=True))
        except Exception as exc:  # the kill below (SandboxedKernelManager.close) still reaps the tree
            log.warning("shutting the unresponsive kernel down: %s", exc)

    # ---- output cap -------------------------------------------------------------------------------------
    def output(self, outs, msg, display_id, cell_index):  # noqa: ANN001, ANN201 - nbclient signature
        kind = msg.get("msg_type")
        content = msg.get("content", {})
        if kind == "error":  # always kept: it decides the grade; its traceback is bounded
            tb, total, kept = content.get("traceback") or [], 0, []
            for line in tb:
                total += len(line)
                if total > MAX_TRACEBACK_CHARS:
                    kept.append("... (traceback truncated by the grader)")
                    break
                kept.append(line)
            content["traceback"] = kept
            content["evalue"] = str(content.get("evalue", ""))[:MAX_TRACEBACK_CHARS]
            return super().output(outs, msg, display_id, cell_index)
        size = _size(content)
        if self._used + size > self.output_bytes:
            self._dropped += size
            if cell_index not in self._noted:
                self._noted.add(cell_index)
                outs.append(
                    new_output(
                        "stream",
                        name="stdout",
                        text=f"\n[output truncated by the grader: this submission's output passed "
                        f"{self.output_bytes} bytes; the rest of this cell's output is not kept]\n",
                    )
                )
            return None
        self._used += size
        return super().output(outs, msg, display_id, cell_index)
