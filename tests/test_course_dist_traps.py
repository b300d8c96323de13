"""The two fork deadlocks measured on this course's machine, reproduced, and the default launch shown safe.

Run: .venv/bin/python -m pytest tests/test_course_dist_traps.py -x
Trap 1 (OpenMP is not fork-safe): the parent ran a multi-threaded torch op, a plain-fork child's first
multi-threaded op hangs. Trap 2 (glibc resolver lock): forking while the parent hosts a TCPStore hung ~1 in 4
launches at world 4. launch() forks from a clean torch-preloaded server instead, and sets one thread per
rank first.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import cloudpickle
import pytest
import torch

import course_dist
from course_dist import launch

cloudpickle.register_pickle_by_value(sys.modules[__name__])
pytestmark = pytest.mark.usefixtures("no_surviving_children")

TRAP1 = textwrap.dedent("""
    import multiprocessing as mp, sys, torch
    def child(fix):
        if fix:
            torch.set_num_threads(1)   # what launch() does first thing in every rank
        b = torch.randn(512, 512)
        for _ in range(3):
            (b @ b).sum()
        print("child done", flush=True)
    if __name__ == "__main__":
        torch.set_num_threads(2)
        a = torch.randn(1024, 1024)
        (a @ a).sum()                  # the parent's OpenMP pool now exists
        p = mp.get_context("fork").Process(target=child, args=(sys.argv[1] == "fix",))
        p.start()
        print("forked", flush=True)
        p.join()
""")


def _run_trap(tmp_path, mode: str) -> subprocess.Popen:
    script = tmp_path / "trap1.py"
    script.write_text(TRAP1)
    out = open(tmp_path / f"{mode}.out", "w")
    # own session: on timeout we kill the script *and* its forked child as one process group
    return subprocess.Popen(
        [sys.executable, str(script), mode], stdout=out, stderr=subprocess.STDOUT, start_new_session=True
    )


def test_fork_after_threads_hang_is_real_and_one_thread_fixes_it(tmp_path):
    procs = {mode: _run_trap(tmp_path, mode) for mode in ("nofix", "fix")}
    try:
        deadline = time.monotonic() + 90
        text = {}
        while time.monotonic() < deadline:
            text = {m: (tmp_path / f"{m}.out").read_text() for m in procs}
            if all("forked" in t for t in text.values()) and "child done" in text["fix"]:
                break
            time.sleep(0.1)
        assert "child done" in text["fix"], text
        time.sleep(5.0)  # a healthy child needs well under a second for three 512x512 matmuls
        text = {m: (tmp_path / f"{m}.out").read_text() for m in procs}
        assert "forked" in text["nofix"] and "child done" not in text["nofix"], text
        assert procs["nofix"].poll() is None, "the plain-fork child should still be hung"
    finally:
        for p in procs.values():
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()


def threaded_matmul():
    b = torch.randn(512, 512)
    return torch.get_num_threads(), float((b @ b).sum() * 0)


def test_default_launch_is_safe_after_parent_ran_threads():
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        a = torch.randn(1024, 1024)
        (a @ a).sum()  # the trap's precondition, in this very process
        res = launch(threaded_matmul, 2, threads_per_rank=2, timeout=60)
        assert list(res) == [(2, 0.0), (2, 0.0)]
        # fork is opt-in; it survives the trap only because ranks start with threads_per_rank=1
        res = launch(threaded_matmul, 2, start_method="fork", timeout=60)
        assert list(res) == [(1, 0.0), (1, 0.0)]
    finally:
        torch.set_num_threads(before)


def tiny():
    t = torch.ones(1)
    torch.distributed.all_reduce(t)
    return t.item()


def test_tcpstore_fork_trap_default_launch_repeatedly_at_world_4():
    # the launcher hosts a TCPStore; ranks are not forked from it (measured under plain fork: 9 of 40 hung)
    for _ in range(10):
        assert launch(tiny, 4, timeout=30, stream=False) == [4.0] * 4
    assert course_dist.launch(tiny, 4, timeout=30).start_method == "forkserver"
    # opt-in fork is safe from this trap too: the launcher creates its store only after forking the ranks
    for _ in range(10):
        assert launch(tiny, 4, start_method="fork", timeout=30, stream=False) == [4.0] * 4
