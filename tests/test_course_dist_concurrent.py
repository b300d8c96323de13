"""Two launches at the same moment (two notebooks, pytest-xdist workers, two threads) must not collide.

Run: .venv/bin/python -m pytest tests/test_course_dist_concurrent.py -x
Each launch hosts its own TCPStore on an OS-assigned port and keys its group under a unique prefix.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time

import cloudpickle
import pytest
import torch
import torch.distributed as dist

import course_dist
from course_dist import launch

cloudpickle.register_pickle_by_value(sys.modules[__name__])
pytestmark = pytest.mark.usefixtures("no_surviving_children")


def tagged(tag, rounds):
    t = torch.zeros(1)
    for _ in range(rounds):
        t += 1.0
        dist.all_reduce(t)
    return tag, course_dist.rank(), t.item()


def test_two_launches_from_two_threads():
    out: dict[str, object] = {}

    def go(tag, world):
        try:
            out[tag] = launch(tagged, world, args=(tag, 10), timeout=60, stream=False)
        except BaseException as e:  # noqa: BLE001 - report in the main thread
            out[tag] = e

    threads = [threading.Thread(target=go, args=(tag, w)) for tag, w in (("a", 2), ("b", 3))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    a, b = out["a"], out["b"]
    assert not isinstance(a, BaseException) and not isinstance(b, BaseException), (a, b)

    # 10 rounds of "add one, then sum over ranks": x -> (x + 1) * world
    def expect(world):
        x = 0.0
        for _ in range(10):
            x = (x + 1.0) * world
        return x

    assert list(a) == [("a", r, expect(2)) for r in range(2)]
    assert list(b) == [("b", r, expect(3)) for r in range(3)]


SCRIPT = textwrap.dedent("""
    import os, sys, time, torch, torch.distributed as dist, course_dist
    def work(tag, flag):
        open(f"{flag}.{course_dist.rank()}", "w").close()  # ranks are up: the test launches now
        t = torch.tensor([float(course_dist.rank())])
        for _ in range(20):
            dist.all_reduce(t)
            time.sleep(0.05)
        return tag, t.item()
    if __name__ == "__main__":
        res = course_dist.launch(work, 2, args=(sys.argv[1], sys.argv[2]), timeout=120, stream=False)
        print("RESULT", res)
""")


def overlapping(tag, flag):
    t = torch.tensor([float(course_dist.rank())])
    for _ in range(20):
        dist.all_reduce(t)
        time.sleep(0.05)
    return tag, t.item(), os.path.exists(f"{flag}.0")


def test_two_launches_from_two_processes(tmp_path):
    # another notebook (a separate interpreter with its own forkserver and store) runs while this one launches
    script, flag = tmp_path / "nb.py", tmp_path / "up"
    script.write_text(SCRIPT)
    other = subprocess.Popen(
        [sys.executable, str(script), "x", str(flag)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "up.1").exists():
            assert other.poll() is None and time.monotonic() < deadline, other.communicate()
            time.sleep(0.02)
        mine = launch(overlapping, 2, args=("y", str(flag)), timeout=60, stream=False)
        out, err = other.communicate(timeout=120)
    finally:
        if other.poll() is None:
            other.kill()
            other.wait()
    assert other.returncode == 0, err[-2000:]
    # rank values 0 and 1 summed 20 times: 1 * 2**19
    assert "RESULT [('x', 524288.0), ('x', 524288.0)]" in out, out
    assert list(mine) == [("y", 524288.0, True)] * 2
