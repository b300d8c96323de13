"""Shared pytest fixtures.

- ``COURSE_FAST=1`` for every test (labs pick their small sizes, as under the autograder).
- ``no_surviving_children``: fails a test that leaves any descendant process alive (launch ranks, their
  DataLoader workers, torchrun workers). The long-lived helpers that are *meant* to outlive a test are
  excluded: course_dist's forkserver and multiprocessing's resource tracker.
"""

from __future__ import annotations

import os
import time

import psutil
import pytest

os.environ.setdefault("COURSE_FAST", "1")

if os.environ.get("PYTEST_XDIST_WORKER"):
    # A pytest-xdist worker dies with the pytest that started it: a SIGTERM or SIGKILL to `make test` used to
    # leave both workers running on (reparented to init), and with them whatever test they were in. Our own
    # children follow their worker (autograder.procs.die_with_parent, ipykernel's parent poll, bwrap).
    from autograder.procs import die_with_parent

    die_with_parent()


def _helpers() -> set[int]:
    pids: set[int] = set()
    try:
        from course_dist import _mp

        if _mp.forkserver_pid():
            pids.add(_mp.forkserver_pid())
    except ImportError:
        pass
    try:
        from multiprocessing import forkserver, resource_tracker

        if resource_tracker._resource_tracker._pid:
            pids.add(resource_tracker._resource_tracker._pid)
        if forkserver._forkserver._forkserver_pid:
            pids.add(forkserver._forkserver._forkserver_pid)
    except (ImportError, AttributeError):
        pass
    return pids


def live_descendants(exclude: set[int] = frozenset()) -> list[psutil.Process]:
    """Descendants of this process that are alive (zombies are dead), minus helpers and ``exclude``."""
    skip = _helpers() | set(exclude)
    out = []
    for p in psutil.Process().children(recursive=True):
        try:
            if p.pid not in skip and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.NoSuchProcess:
            pass
    return out


def assert_no_survivors(before: set[int], wait_s: float = 5.0) -> None:
    """Poll up to ``wait_s`` for every descendant not there ``before`` to be gone; fail naming them."""
    end = time.monotonic() + wait_s
    while True:
        left = live_descendants(before)
        if not left or time.monotonic() > end:
            break
        time.sleep(0.05)
    desc = []
    for p in left:
        try:
            desc.append(f"pid {p.pid} {' '.join(p.cmdline())[:120]}")
        except psutil.Error:
            pass
    assert not desc, f"{len(desc)} child process(es) survived the test: {desc}"


@pytest.fixture
def no_surviving_children():
    """Use on any test that starts processes: asserts none of them is alive afterwards."""
    before = {p.pid for p in live_descendants()}
    yield
    assert_no_survivors(before)


@pytest.fixture(scope="session")
def fresh_release(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201 - a Path
    """Every lab released from solutions/ into a temp dir once per session (labs/ and build/ untouched)."""
    from autograder.config import CourseConfig
    from autograder.release import release

    tmp = tmp_path_factory.mktemp("release")
    release(CourseConfig().with_(labs=tmp / "labs", build=tmp / "build"))
    return tmp / "labs"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The two pipeline modules first (between them they grade every lab: the longest module fixtures by
    far), so that under ``make test`` (``-n 3 --dist loadfile``) two workers start on them at once and the
    third on the rest of the suite; serially it makes no difference to the total."""
    items.sort(key=lambda it: not it.nodeid.startswith("tests/test_pipeline_grading"))  # stable
