"""Running the graded trainer as real processes: ``python -m <pkg>.train`` (world 1) or ``torchrun
--standalone`` (never a fixed port), each in its own session with a timeout; the whole process tree is
killed on timeout or error, so nothing outlives a drill; its own ``TMPDIR`` (where a SIGKILLed torchrun agent
leaves its ``torchelastic_*`` folder) is removed once the tree is reaped.

- :func:`run_trainer` - run to completion; :func:`start_trainer` / :func:`stop_tree` / :func:`wait_for_step` -
  for drills that signal a live job;
- :func:`crash_in_save` - a world-1 run (a forked rank) whose ``torch.save`` SIGKILLs the process after its
  n-th save of step s;
- ``HW_SLOW_COMPUTE="<rank>:<seconds>"`` (with ``slow_compute=True``) - the trainer runs under
  :mod:`._drill_main`, which makes that rank's every forward pass sleep: slowness *inside* forward/backward;
- :func:`launch_trainer` - the same entry point (``<pkg>.train.main(argv)``) on ranks forked by
  ``course_dist.launch`` from its torch-preloaded server (about a second instead of the 10-30 s a fresh
  torchrun job spends importing torch on 2 cores): for the runs no signal or restart is aimed at (the
  uninterrupted baselines, stop-at-``max_steps`` and resume, resize). The fault drills stay real processes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from course_dist import _scratch

from .adapter import package_root

#: the tiny workload every drill uses (seconds per run on 2 cores, mostly interpreter start-up)
SMALL = {
    "data_size": 512,
    "global_batch": 64,
    "micro_batch": 16,
    "in_dim": 32,
    "hidden": 64,
    "depth": 2,
    "epochs": 2,
    "ckpt_every": 4,
    "keep_last": 3,
    "lr": 0.01,
    "warmup_steps": 2,
    "log_every": 0,
}


def cli(**overrides: Any) -> list[str]:
    """``--kebab-case value`` arguments from SMALL updated with ``overrides`` (bools become --x / --no-x)."""
    opts = {**SMALL, **overrides}
    out: list[str] = []
    for k, v in opts.items():
        flag = "--" + k.replace("_", "-")
        if isinstance(v, bool):
            out.append(flag if v else "--no-" + k.replace("_", "-"))
        else:
            out += [flag, str(v)]
    return out


def _env(pkg: ModuleType, extra: dict[str, str] | None) -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(package_root(pkg)), str(Path(__file__).resolve().parents[3])]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env.update(PYTHONPATH=os.pathsep.join(paths), OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    env.pop("COURSE_FAULTS", None)
    env.update(extra or {})
    return env


def command(
    pkg: ModuleType,
    args: list[str],
    nproc: int = 1,
    max_restarts: int = 0,
    torchrun: bool | None = None,
    slow_compute: bool = False,
) -> list[str]:
    """The command line: plain ``python -m pkg.train`` for world 1, else ``torchrun --standalone`` (port
    0); with ``slow_compute`` the entry point is :mod:`._drill_main` (it reads ``HW_SLOW_COMPUTE``)."""
    use_torchrun = nproc > 1 if torchrun is None else torchrun
    if slow_compute:
        mod = [f"{__package__}._drill_main", pkg.__name__, *args]
    else:
        mod = [f"{pkg.__name__}.train", *args]
    if not use_torchrun:
        return [sys.executable, "-m", *mod]
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={nproc}",
        f"--max-restarts={max_restarts}",
        "--monitor-interval=0.5",
        "-m",
        *mod,
    ]


@dataclass
class Run:
    """A finished trainer process."""

    returncode: int
    output: str
    elapsed: float
    cmd: list[str]

    def check(self) -> Run:
        assert self.returncode == 0, (
            f"trainer exited {self.returncode}: {' '.join(self.cmd)}\n{self.output[-4000:]}"
        )
        return self


def start_trainer(
    pkg: ModuleType,
    args: list[str],
    *,
    nproc: int = 1,
    max_restarts: int = 0,
    env: dict[str, str] | None = None,
    log_path: str | Path | None = None,
    torchrun: bool | None = None,
    slow_compute: bool = False,
) -> subprocess.Popen:
    """Start a trainer in its own session (so its whole tree can be killed); output goes to ``log_path``;
    its temp dir is a fresh folder (``p.tmpdir``) that :func:`stop_tree` removes."""
    cmd = command(pkg, args, nproc, max_restarts, torchrun, slow_compute)
    cwd = Path(log_path).parent if log_path else Path.cwd()
    out = open(log_path, "w") if log_path else subprocess.DEVNULL
    child_env = _env(pkg, env)
    tmp = _scratch.child_tmp(child_env, "trainer_tmp_")
    # cwd outside the graded folder: `python -m` puts cwd first on sys.path, which could shadow the package.
    p = subprocess.Popen(  # (a failed start leaves `tmp` to the interpreter's exit)
        cmd, cwd=cwd, env=child_env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
    )
    p.cmd = cmd  # type: ignore[attr-defined]
    p.tmpdir = tmp  # type: ignore[attr-defined]
    return p


def stop_tree(p: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
    """Signal the trainer's whole session (torchrun agent and every worker), then reap it and remove its
    temp dir (``p.tmpdir``, where a SIGKILLed agent left its ``torchelastic_*`` folder)."""
    try:
        os.killpg(p.pid, sig)
    except ProcessLookupError:
        pass
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=10)
    _scratch.remove(getattr(p, "tmpdir", None))


def run_trainer(
    pkg: ModuleType,
    run_dir: str | Path,
    args: list[str],
    *,
    nproc: int = 1,
    max_restarts: int = 0,
    env: dict[str, str] | None = None,
    timeout: float = 300.0,
    torchrun: bool | None = None,
    slow_compute: bool = False,
) -> Run:
    """Run to completion (or ``timeout``, cut to what the graded cell has left (:func:`budget`): then the tree
    is SIGKILLed and the Run says so, where the grader's interrupt of the cell would lose the log)."""
    timeout, note = budget(timeout)
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    log_path = run_dir / f"log-{time.time_ns()}.txt"
    t0 = time.perf_counter()
    p = start_trainer(
        pkg,
        ["--run-dir", str(run_dir), *args],
        nproc=nproc,
        max_restarts=max_restarts,
        env=env,
        log_path=log_path,
        torchrun=torchrun,
        slow_compute=slow_compute,
    )
    try:
        rc = p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        rc = -999
    finally:
        stop_tree(p)  # nothing survives: also reaps workers an agent left behind
    out = log_path.read_text(errors="replace")
    if rc == -999:
        out += f"\n[harness] TIMEOUT after {timeout:.0f} s: process tree killed {note or ''}"
    return Run(rc, out, time.perf_counter() - t0, p.cmd)  # type: ignore[attr-defined]


def budget(timeout: float) -> tuple[float, str | None]:
    """``(seconds, note)``: ``timeout``, or what the graded cell has left minus the launcher's margin
    when that is less (``course_dist._budget.clamp``, as every ``course_dist.launch``)."""
    from course_dist import _budget

    return _budget.clamp(timeout)


def wait_for_step(
    run_dir: str | Path, step: int, timeout: float = 60.0, p: subprocess.Popen | None = None
) -> bool:
    """Poll rank 0's metrics until it logged ``step`` (False on timeout or when ``p`` exited first)."""
    path = Path(run_dir) / "metrics" / "rank-0.jsonl"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if p is not None and p.poll() is not None:
            return False
        if path.exists():
            for line in path.read_text().splitlines()[::-1]:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if rec.get("event") == "step" and rec.get("step", -1) >= step:
                    return True
        time.sleep(0.05)
    return False


def _train_rank(name: str, root: str, argv: list[str], slow: str) -> int:
    """One rank of :func:`launch_trainer`: the package's CLI entry point in a forked rank (group exists)."""
    import importlib

    if root in sys.path:
        sys.path.remove(root)
    sys.path.insert(0, root)  # the graded package first, as in the kernel and under torchrun
    if slow:
        from ._drill_main import _install

        who, _, secs = slow.partition(":")
        _install(int(who), float(secs))
    return importlib.import_module(f"{name}.train").main(argv)


def launch_trainer(
    pkg: ModuleType,
    run_dir: str | Path,
    args: list[str],
    *,
    nproc: int = 1,
    timeout: float = 300.0,
    slow_compute: str = "",
) -> Run:
    """Run ``<pkg>.train.main(["--run-dir", run_dir, *args])`` on ``nproc`` ranks forked by
    ``course_dist.launch`` (its process group already exists: ``init_distributed`` joins it). A rank that
    raises gives returncode 1 and its traceback as the output. ``slow_compute="<rank>:<seconds>"`` slows that
    rank's every forward pass (as ``HW_SLOW_COMPUTE`` does under :mod:`._drill_main`)."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    argv = ["--run-dir", str(run_dir), *args]
    desc = [f"launch({pkg.__name__}.train.main, world_size={nproc})", *argv]
    rank_args = (pkg.__name__, str(package_root(pkg)), argv, slow_compute)
    return _forked(_train_rank, nproc, rank_args, timeout, desc)


def _forked(rank_fn: Any, nproc: int, rank_args: tuple, timeout: float, desc: list[str],
            finished: str = "") -> Run:
    """``course_dist.launch(rank_fn, nproc)`` as a :class:`Run`: returncode 0, or the failing rank's exit code
    (-9 when SIGKILLed; 1 when it raised) with its traceback, or -999 at the timeout (every rank torn down by
    the launcher either way)."""
    import course_dist
    from course_dist.errors import LaunchTimeout, RankError

    t0 = time.perf_counter()
    try:
        course_dist.launch(rank_fn, nproc, args=rank_args, backend="gloo", timeout=timeout, stream=False,
                           env={"PYTHONUNBUFFERED": "1"})
        rc, out = 0, finished
    except RankError as e:
        rc = e.exitcode if e.exitcode is not None else 1
        out = f"{e}\n{e.remote_traceback}\n" + "\n".join(e.stderr or [])
    except LaunchTimeout as e:
        rc, out = -999, f"{e}\n[harness] TIMEOUT after {timeout:.0f} s"
    return Run(rc, out, time.perf_counter() - t0, desc)


def _crash_rank(name: str, root: str, argv: list[str], step: int, nth: int) -> int:
    """The rank of :func:`crash_in_save`: ``torch.save`` SIGKILLs this process after its ``nth`` save of a
    dict whose ``"step"`` is ``step`` (the file is written, the rest of the checkpoint is not)."""
    import torch

    real, calls = torch.save, [0]

    def save(obj, f, *a, **k):  # noqa: ANN001, ANN002, ANN003, ANN202 - torch.save's signature
        real(obj, f, *a, **k)
        if isinstance(obj, dict) and obj.get("step") == step:
            calls[0] += 1
            if calls[0] >= nth:
                os.kill(os.getpid(), signal.SIGKILL)  # mid-checkpoint

    torch.save = save
    return _train_rank(name, root, argv, "")


def crash_in_save(
    pkg: ModuleType, run_dir: str | Path, args: list[str], step: int, nth: int = 1, timeout: float = 300.0
) -> Run:
    """World-1 run SIGKILLed right after the ``nth`` ``torch.save`` of a dict whose ``"step"`` is ``step``; a
    rank forked by ``course_dist.launch`` (a real process, really SIGKILLed; returncode -9 when it was)."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    argv = ["--run-dir", str(run_dir), *args]
    desc = [f"launch({pkg.__name__}.train.main, world_size=1), SIGKILL in save #{nth} of step {step}", *argv]
    return _forked(_crash_rank, 1, (pkg.__name__, str(package_root(pkg)), argv, step, nth), timeout, desc,
                   finished="the run finished: no save of that step was reached")
