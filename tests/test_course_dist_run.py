"""``python -m course_dist.run`` under a real torchrun: a plain run, and a SIGKILL fault with a clean restart.

Run: .venv/bin/python -m pytest tests/test_course_dist_run.py -x   (~15 s: torchrun itself takes ~7 s per job)
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from course_dist.run import resolve

REPO = pathlib.Path(__file__).resolve().parents[1]
TORCHRUN = [sys.executable, "-m", "torch.distributed.run"]
pytestmark = pytest.mark.usefixtures("no_surviving_children")


def _torchrun(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    full_env = {**os.environ, **(env or {})}
    full_env.pop("COURSE_FAULTS", None) if env is None else None
    return subprocess.run(
        [*TORCHRUN, "--standalone", "--nproc-per-node", "2", *args],
        cwd=REPO,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_sigkill_fault_then_clean_restart():
    # rank 1 is SIGKILLed at step 2 of attempt 0; torchrun restarts both ranks; attempt 1 reconnects (store
    # prefix attempt_1, not the dead attempt's gloo addresses) and finishes.
    p = _torchrun(
        "--max-restarts",
        "1",
        "--monitor-interval",
        "0.5",
        "-m",
        "course_dist.run",
        "course_dist.examples:train_demo",
        "6",
        env={"COURSE_FAULTS": "kill:1@2"},
    )
    log = p.stdout + p.stderr
    assert p.returncode == 0, log[-4000:]
    assert "fault: SIGKILL rank 1 at step 2 (attempt 0)" in log, log[-4000:]
    for r in (0, 1):
        assert f"rank {r} attempt 1 finished 6 steps" in log, log[-4000:]
        assert f"process group ready: rank {r}/2, backend gloo, attempt 1" in log
    assert "attempt 0 finished" not in log


def test_outside_torchrun_the_error_says_what_to_do():
    env = {
        k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
    }
    p = subprocess.run(
        [sys.executable, "-m", "course_dist.run", "course_dist.examples:train_demo"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode != 0 and "start it with torchrun" in p.stderr, p.stderr[-2000:]


def test_resolve_target():
    from course_dist.examples import train_demo

    assert resolve("course_dist.examples:train_demo") is train_demo
    with pytest.raises(ValueError, match="expected 'pkg.module:function', got 'course_dist.examples'"):
        resolve("course_dist.examples")
    with pytest.raises(TypeError, match="is a str, not a function"):
        resolve("course_dist._log:LOGGER_NAME")
