"""The student's kernel in a bubblewrap sandbox (DESIGN.md, grading contract).

Public interface (stable; grade.py / worker.py / nbgrader_ext.py build on it)::

    sandbox_available() -> str | None   # None: usable; else a message naming `apt-get install bubblewrap`
    SandboxSpec(workdir, read_only=(), writable=(), wall_s, cpu_s, memory_bytes, processes, file_size_bytes,
                output_bytes)                   # what one submission's kernel may see and use
    SandboxedKernelManager(sandbox=spec, extra_env={...})   # a jupyter_client AsyncKernelManager

What the kernel (and every rank or grandchild it starts) sees: an empty root (bwrap's tmpfs) with the system
(/usr, /etc), the interpreter and the course's venv and ``course_dist/`` read-only at their usual paths, a
private /tmp and /dev/shm, its own /proc (pid namespace: the grader's processes are invisible and cannot be
signalled), its own network namespace (loopback only, so gloo ranks still talk), and ``spec.workdir`` (a copy
of the submission) plus ``spec.writable`` writable. No solution, hidden test, mutant, gradebook, other
submission or grader output exists in that view. The kernel talks to the trusted worker over ipc sockets in a
private connection directory bound into the sandbox (TCP loopback is the sandbox's own).

Limits: processes (cgroup ``pids.max``: bounds a fork bomb) and memory (cgroup ``memory.limit_in_bytes``: the
OOM killer picks a process of this submission only), CPU seconds and file size per process (``prlimit``), wall
time (a timer kills the whole cgroup), output bytes (enforced by the executor, ``nbgrader_ext``). Everything
the kernel started dies with it: the pid namespace's init is bwrap (``--die-with-parent``), and on shutdown
every task of the submission's cgroups is SIGKILLed (nothing relies on an environment token a student can
drop).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from traitlets import Any, Dict

log = logging.getLogger("autograder.sandbox")

INSTALL_HINT = "apt-get install bubblewrap"
CGROUP_ROOT = Path("/sys/fs/cgroup")
STAGED_MOUNT = "/.course-staged"  # where the sandbox sees the staged copy of the workdir (read-only)
# Environment passed into the sandbox (everything else is dropped: the worker's env names grader paths).
ENV_KEEP = ("PATH", "LANG", "LC_ALL", "TERM", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "PYTHONHASHSEED")
# JPY_PARENT_PID is dropped on purpose: the worker's pid means nothing in the kernel's pid namespace, and
# ipykernel would exit at once polling it; --die-with-parent ties the kernel to the worker instead.
ENV_KEEP_PREFIXES = ("COURSE_", "FIXLAB_", "HW_", "TORCH_", "GLOO_", "NCCL_", "MPLBACKEND")


def _env_int(name: str, default: int) -> int:
    """An instructor's override of a default limit (read where the spec is built: the worker)."""
    raw = os.environ.get(name, "")
    if raw == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ValueError(f"{name}={raw!r} is not an integer") from exc


@dataclass(frozen=True)
class SandboxSpec:
    """What one submission's kernel may see and use.

    Attributes:
        workdir: the kernel's cwd, writable: a *copy* of the submission (never the grader's own files);
            ``SandboxedExecute`` fills it in per run.
        read_only: extra paths visible read-only (the defaults of :func:`default_read_only` are always added).
        writable: extra directories visible writable at the same path (e.g. the evidence directory).
        wall_s: whole-kernel wall clock; on expiry every process of the submission is killed.
        cpu_s: CPU seconds per process (RLIMIT_CPU); each rank has its own budget.
        memory_bytes: memory of the kernel and everything it starts together (cgroup).
        processes: tasks (processes + threads) of the submission together (cgroup pids.max).
        file_size_bytes: largest file a process may write (RLIMIT_FSIZE).
        output_bytes: notebook output the executor keeps (the rest is dropped with a note).
        tmp_bytes: size of the private /tmp and /dev/shm tmpfs.
        work_bytes: size of the workdir: a tmpfs (charged to the submission's memory) filled with a copy of
            ``workdir`` when the sandbox starts, so a submission cannot fill the host's disk through it.
        Defaults of the byte/process limits can be overridden with ``COURSE_SANDBOX_MEMORY_MB``,
        ``COURSE_SANDBOX_PROCESSES``, ``COURSE_SANDBOX_FILE_MB``, ``COURSE_SANDBOX_OUTPUT_KB`` and
        ``COURSE_SANDBOX_TMP_MB`` and ``COURSE_SANDBOX_WORK_MB`` in the grader's environment.
    """

    workdir: Path = Path(".")
    read_only: tuple[Path, ...] = ()
    writable: tuple[Path, ...] = ()
    wall_s: float = 900.0
    cpu_s: float = 900.0
    memory_bytes: int = field(default_factory=lambda: _env_int("COURSE_SANDBOX_MEMORY_MB", 6144) << 20)
    processes: int = field(default_factory=lambda: _env_int("COURSE_SANDBOX_PROCESSES", 1024))
    file_size_bytes: int = field(default_factory=lambda: _env_int("COURSE_SANDBOX_FILE_MB", 1024) << 20)
    output_bytes: int = field(default_factory=lambda: _env_int("COURSE_SANDBOX_OUTPUT_KB", 4096) << 10)
    tmp_bytes: int = field(default_factory=lambda: _env_int("COURSE_SANDBOX_TMP_MB", 2048) << 20)
    work_bytes: int = field(default_factory=lambda: _env_int("COURSE_SANDBOX_WORK_MB", 2048) << 20)
    env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "workdir", Path(self.workdir))
        object.__setattr__(self, "read_only", tuple(Path(p) for p in self.read_only))
        object.__setattr__(self, "writable", tuple(Path(p) for p in self.writable))
        for name in ("wall_s", "cpu_s"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or v <= 0:
                raise ValueError(f"SandboxSpec.{name} must be a positive number of seconds, got {v!r}")
        limits = ("memory_bytes", "processes", "file_size_bytes", "output_bytes", "tmp_bytes", "work_bytes")
        for name in limits:
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise ValueError(f"SandboxSpec.{name} must be a positive integer, got {v!r}")

    def to_json(self) -> str:
        d = asdict(self)
        d["workdir"] = str(self.workdir)
        d["read_only"] = [str(p) for p in self.read_only]
        d["writable"] = [str(p) for p in self.writable]
        return json.dumps(d)

    @classmethod
    def from_json(cls, text: str) -> SandboxSpec:
        return cls(**json.loads(text))


# ---- availability ---------------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def sandbox_available() -> str | None:
    """None when bubblewrap can build the sandbox here, else why not (naming the package to install)."""
    exe = shutil.which("bwrap")
    if exe is None:
        return (
            f"bubblewrap (bwrap) is not installed: {INSTALL_HINT} (or grade with --unsafe-no-sandbox, "
            "which lets a submission read hidden tests and other students' files)"
        )
    try:
        r = subprocess.run(
            [exe, "--ro-bind", "/", "/", "--unshare-pid", "--unshare-net", "--die-with-parent", "true"],
            capture_output=True,
            timeout=30,
            text=True,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap at {exe} cannot start a sandbox here: {exc!r}"
    if r.returncode != 0:
        return f"bwrap at {exe} cannot create namespaces here (exit {r.returncode}): {r.stderr.strip()[:300]}"
    return None


def _own_cgroup(controller: str) -> Path | None:
    """This process's cgroup directory of a v1 ``controller`` (nested, so the box's own limits still hold)."""
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, ctrls, path = line.split(":", 2)
            if controller in ctrls.split(","):
                d = CGROUP_ROOT / controller / path.lstrip("/")
                return d if d.is_dir() and os.access(d, os.W_OK) else None
    except OSError:
        return None
    return None


def default_read_only() -> list[Path]:
    """The course code and environment a kernel needs: interpreter, venv, site-packages, ``course_dist``."""
    import course_dist

    paths = [Path(sys.prefix), Path(sys.base_prefix), Path(course_dist.__file__).resolve().parent]
    exe = Path(sys.executable)
    paths.append(exe.parent)
    paths.append(exe.resolve().parent.parent)  # e.g. ~/.pyenv/versions/3.11.7 behind the venv's symlink
    for p in sys.path:  # site-packages outside the venv (user site, .pth additions other than the repo root)
        q = Path(p)
        if p and q.is_dir() and q.name in ("site-packages", "dist-packages"):
            paths.append(q.resolve())
    out: list[Path] = []
    for p in paths:
        if p.exists() and p not in out and str(p) not in ("/", "/work", "/root", "/home", "/tmp"):
            out.append(p)
    return out


# ---- the command line -----------------------------------------------------------------------------------
def _hosts_file() -> Path:
    """The host's /etc/hosts plus ``sandbox`` (the sandbox's hostname) on 127.0.0.1, written once per uid."""
    import tempfile

    try:
        base = Path("/etc/hosts").read_text()
    except OSError:
        base = "127.0.0.1 localhost\n::1 localhost\n"
    text = base.rstrip("\n") + "\n127.0.0.1 sandbox\n"
    path = Path(tempfile.gettempdir()) / f"course-sandbox-hosts-{os.getuid()}"
    if not path.exists() or path.read_text() != text:
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    return path


def bwrap_argv(spec: SandboxSpec, *, private: list[Path] = ()) -> list[str]:
    """``bwrap ... --`` for ``spec``; ``private`` are extra writable dirs (the kernel's connection dir)."""
    # own pid namespace: the grader is invisible and unkillable; own net namespace: loopback only (gloo works)
    argv = ["bwrap", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"]
    argv += ["--hostname", "sandbox"]
    argv += ["--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    for d in ("/usr", "/etc"):
        argv += ["--ro-bind", d, d]
    # the sandbox's hostname must resolve (to loopback): torchrun's rendezvous and c10d's TCPStore look it up,
    # and with no network a name missing from /etc/hosts fails or stalls them
    argv += ["--ro-bind", str(_hosts_file()), "/etc/hosts"]
    for d in ("/bin", "/lib", "/lib64", "/sbin", "/lib32", "/libx32"):
        p = Path(d)
        if p.is_symlink():
            argv += ["--symlink", os.readlink(p), d]
        elif p.is_dir():
            argv += ["--ro-bind", d, d]
    argv += ["--dev", "/dev", "--proc", "/proc"]
    for d in ("/tmp", "/dev/shm"):  # private, size-capped (and charged to the submission's memory cgroup)
        argv += ["--size", str(spec.tmp_bytes), "--tmpfs", d]
    seen: set[str] = set()
    for p in sorted({*default_read_only(), *spec.read_only}, key=lambda q: len(str(q))):
        if str(p) not in seen and p.exists():
            argv += ["--ro-bind", str(p), str(p)]
            seen.add(str(p))
    # The workdir is a size-capped tmpfs (the quota: a full one is ENOSPC, never a full host disk), filled
    # from a read-only view of the staged copy by the prelude below, before the command starts.
    argv += ["--ro-bind", str(spec.workdir), STAGED_MOUNT]
    argv += ["--size", str(spec.work_bytes), "--tmpfs", str(spec.workdir)]
    for p in [*spec.writable, *private]:
        argv += ["--bind", str(p), str(p)]
    argv += ["--unsetenv", "JPY_PARENT_PID"]  # set by jupyter_client's launcher after our env filter
    argv += [
        "--dir",
        "/tmp/home",
        "--chdir",
        str(spec.workdir),
        "--setenv",
        "HOME",
        "/tmp/home",
        "--setenv",
        "TMPDIR",
        "/tmp",
    ]
    argv += ["--setenv", "MPLCONFIGDIR", "/tmp/home/.mpl", "--setenv", "IPYTHONDIR", "/tmp/home/.ipython"]
    # bwrap's root is a writable tmpfs: read-only once everything is mounted (only the binds stay writable)
    return argv + ["--remount-ro", "/", "--", "/bin/sh", "-c", f'cp -a {STAGED_MOUNT}/. . && exec "$@"', "sh"]


def sandbox_env(env: dict[str, str], extra: dict[str, str]) -> dict[str, str]:
    """The environment a sandboxed kernel gets: a short allow-list of ``env`` plus ``extra``."""
    out = {k: v for k, v in env.items() if k in ENV_KEEP or k.startswith(ENV_KEEP_PREFIXES)}
    out.update(extra)
    out["PYTHONNOUSERSITE"] = "1"
    return out


class _Cgroups:
    """The submission's own pids + memory cgroups (v1, nested under ours); kill() empties them."""

    def __init__(self, spec: SandboxSpec) -> None:
        self.dirs: list[Path] = []
        name = f"course-sbx-{uuid.uuid4().hex[:12]}"
        for ctrl, files in (
            ("pids", {"pids.max": str(spec.processes)}),
            ("memory", {"memory.limit_in_bytes": str(spec.memory_bytes)}),
        ):
            base = _own_cgroup(ctrl)
            if base is None:
                log.warning("no writable %s cgroup: the sandbox runs without its %s limit", ctrl, ctrl)
                continue
            d = base / name
            try:
                d.mkdir()
                for f, v in files.items():
                    (d / f).write_text(v)
                if ctrl == "memory" and (d / "memory.memsw.limit_in_bytes").exists():
                    try:  # swap too, where the box has any
                        (d / "memory.memsw.limit_in_bytes").write_text(str(spec.memory_bytes))
                    except OSError:
                        pass
                self.dirs.append(d)
            except OSError as exc:
                log.warning("cannot set up cgroup %s (%r): running without the %s limit", d, exc, ctrl)

    def join_script(self) -> str:
        """Shell that moves itself into the cgroups, then execs the rest of its argv (the sandbox)."""
        moves = "".join(f'echo $$ > "{d}/cgroup.procs" || exit 97; ' for d in self.dirs)
        return moves + 'exec "$@"'

    def pids(self) -> set[int]:
        out: set[int] = set()
        for d in self.dirs:
            try:
                out |= {int(x) for x in (d / "cgroup.procs").read_text().split()}
            except (OSError, ValueError):
                pass
        return out

    def kill(self, timeout: float = 10.0) -> int:
        """SIGKILL every process of the submission until none is left; returns how many were signalled."""
        killed: set[int] = set()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            left = self.pids() - {os.getpid()}
            if not left:
                break
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed.add(pid)
                except ProcessLookupError:
                    pass
            time.sleep(0.05)
        return len(killed)

    def remove(self) -> None:
        for d in self.dirs:
            for _ in range(50):  # rmdir fails while a dying task is still accounted
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)


class SandboxedKernelManager(AsyncKernelManager):
    """An AsyncKernelManager whose kernel runs under bwrap (``sandbox``), or plainly when ``sandbox`` is None.

    ``extra_env`` is added to the kernel's environment either way (COURSE_EVIDENCE_DIR, COURSE_GRADE_SEED).
    ``killed_leftovers`` counts processes that were still alive in the submission's cgroups at shutdown.
    """

    sandbox = Any(None, allow_none=True, help="SandboxSpec or None (no sandbox)")
    extra_env = Dict({}, help="environment variables added for the kernel").tag(config=True)

    def __init__(self, **kw: object) -> None:
        super().__init__(**kw)
        self._cgroups: _Cgroups | None = None
        self._conn_dir: str | None = None
        self._timer: threading.Timer | None = None
        self.killed_leftovers = 0
        self.wall_expired = False

    async def _async_pre_start_kernel(self, **kw: object):  # noqa: ANN202 - jupyter_client signature
        if self.sandbox is not None and self._conn_dir is None:
            # The kernel's loopback is its own: talk over ipc sockets in a directory bound into the sandbox.
            self._conn_dir = tempfile.mkdtemp(prefix="course-kernel-")
            os.chmod(self._conn_dir, 0o700)
            self.transport = "ipc"
            self.ip = os.path.join(self._conn_dir, "k")
            self.connection_file = os.path.join(self._conn_dir, "kernel.json")
        cmd, kw = await super()._async_pre_start_kernel(**kw)
        if self.sandbox is not None and self.kernel_spec is not None:
            # A signal to bwrap does not reach the kernel (own session): interrupt over the control channel.
            self.kernel_spec.interrupt_mode = "message"
        return cmd, kw

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: object) -> None:
        env = dict(kw.get("env") or os.environ)
        spec: SandboxSpec | None = self.sandbox
        if spec is None:
            env.update(self.extra_env)
            kw["env"] = env
            return await super()._async_launch_kernel(kernel_cmd, **kw)
        cwd = str(kw.get("cwd") or spec.workdir)
        if Path(cwd).resolve() != spec.workdir.resolve():
            log.info("kernel cwd %s replaced by the sandbox workdir %s", cwd, spec.workdir)
        kw["cwd"] = self._conn_dir  # bwrap itself starts outside; --chdir puts the kernel in the workdir
        kw["env"] = sandbox_env(env, {**spec.env, **self.extra_env})
        self._cgroups = _Cgroups(spec)
        lim = [
            "prlimit",
            f"--cpu={int(spec.cpu_s)}:{int(spec.cpu_s) + 5}",
            f"--fsize={spec.file_size_bytes}",
            "--core=0",
            "--",
        ]
        private = [Path(self._conn_dir)] if self._conn_dir else []
        full = ["/bin/sh", "-c", self._cgroups.join_script(), "sh", *lim, *bwrap_argv(spec, private=private)]
        await super()._async_launch_kernel(full + list(kernel_cmd), **kw)
        self._timer = threading.Timer(spec.wall_s, self._wall_expired)
        self._timer.daemon = True
        self._timer.start()

    def _wall_expired(self) -> None:
        self.wall_expired = True
        log.warning("sandbox wall limit reached: killing every process of the submission")
        if self._cgroups is not None:
            self._cgroups.kill()

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._cgroups is not None:
            self.killed_leftovers += self._cgroups.kill()
            self._cgroups.remove()
            self._cgroups = None
        await super()._async_cleanup_resources(restart=restart)
        if not restart and self._conn_dir:
            shutil.rmtree(self._conn_dir, ignore_errors=True)

    cleanup_resources = _async_cleanup_resources

    def close(self) -> int:
        """Kill whatever is left of the submission, drop its cgroups (idempotent); returns kills so far."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._cgroups is not None:
            self.killed_leftovers += self._cgroups.kill()
            self._cgroups.remove()
            self._cgroups = None
        if self._conn_dir:
            shutil.rmtree(self._conn_dir, ignore_errors=True)
        return self.killed_leftovers


class SandboxedProcess:
    """A plain command (not a kernel) in the submission's sandbox, with the same cgroups and rlimits as a
    sandboxed kernel: the grading run's *student process* (``course_dist.student``, issue 32)."""

    def __init__(self, spec: SandboxSpec, argv: list[str], env: dict[str, str], cwd: str) -> None:
        import subprocess

        self.cgroups = _Cgroups(spec)
        lim = ["prlimit", f"--cpu={int(spec.cpu_s)}:{int(spec.cpu_s) + 5}", f"--fsize={spec.file_size_bytes}",
               "--core=0", "--"]
        full = ["/bin/sh", "-c", self.cgroups.join_script(), "sh", *lim, *bwrap_argv(spec), *argv]
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - read by tail(), closed by close()
        self.proc = subprocess.Popen(full, env=sandbox_env(env, spec.env), cwd=cwd, stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.killed = 0

    def tail(self, limit: int = 2000) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-limit:]

    def interrupt(self) -> int:
        """SIGINT to the student host (a cell's timeout: its request ends with KeyboardInterrupt over there,
        so the trusted kernel's next request finds it answering); returns how many were signalled."""
        n = 0
        for pid in self.cgroups.pids() if self.cgroups is not None else ():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"course_dist.student" in cmd and b"--host" in cmd:
                try:
                    os.kill(pid, signal.SIGINT)
                    n += 1
                except ProcessLookupError:
                    pass
        return n

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> int:
        """Kill everything of the student process (its ranks included); returns the processes killed."""
        if self.cgroups is not None:
            self.killed += self.cgroups.kill()
            self.cgroups.remove()
            self.cgroups = None
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.log.close()
        return self.killed
