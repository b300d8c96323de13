"""A hang inside a graded cell is reported by the launcher (LaunchTimeout naming the stuck rank), not cut
short by the grader's per-cell interrupt (KeyboardInterrupt), even when the launch asks for a longer timeout.

Run: .venv/bin/python -m pytest tests/test_launch_budget.py -x
"""

from __future__ import annotations

import pathlib

import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

from autograder.config import CourseConfig
from course_dist import _budget

REPO = pathlib.Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.usefixtures("no_surviving_children")
CELL_TIMEOUT_S = 30  # the grader's per-cell limit in this test (nbclient's and the kernel's view of it)

WARM = """
import time, torch, torch.distributed as dist, course_dist
course_dist.launch(lambda: 1, 2, timeout=60)  # the forkserver's cold start is not the hang cell's business
"""

HANG = """
def rank_1_stops():
    if course_dist.rank() == 1:
        time.sleep(3600)  # a rank that stops: rank 0 waits in all_reduce
    t = torch.ones(1)
    dist.all_reduce(t)
    return t.item()

course_dist.launch(rank_1_stops, 2, timeout=600)  # asks for far more than the cell has
"""


def test_hang_in_a_graded_cell_ends_as_launch_timeout_before_the_cell_timeout(monkeypatch):
    # The grader's kernel environment, from the grader's own config: the wiring is part of what is tested.
    env = CourseConfig(cell_timeout=CELL_TIMEOUT_S).kernel_environ()
    want = str(CELL_TIMEOUT_S)
    assert env.get(_budget.ENV) == want, f"kernel env {env}, want {_budget.ENV}={want}"
    for key, value in env.items():
        monkeypatch.setenv(key, value)  # the kernel inherits this process's environment
    nb = new_notebook(cells=[new_code_cell(WARM), new_code_cell(HANG)])
    client = NotebookClient(
        nb,
        kernel_name="python3",
        timeout=CELL_TIMEOUT_S,
        interrupt_on_timeout=True,  # what nbgrader's Execute does at the cell limit
        allow_errors=True,
        shutdown_kernel="immediate",
        resources={"metadata": {"path": str(REPO)}},
    )
    client.execute()
    warm, hang = nb.cells
    warm_errors = [o for o in warm.outputs if o.get("output_type") == "error"]
    assert not warm_errors, f"the warm-up launch failed: {warm_errors}"
    errors = [o for o in hang.outputs if o.get("output_type") == "error"]
    got = [(o["ename"], o["evalue"].splitlines()[0] if o["evalue"] else "") for o in errors]
    assert [e for e, _ in got] == ["LaunchTimeout"], f"want one LaunchTimeout error, got {got}"
    head, text = got[0][1], errors[0]["evalue"]
    assert "still running" in head, f"the first line must be the launcher's timeout report: {head!r}"
    # rank 0 waits in all_reduce for rank 1, which never entered a collective: the report says both
    assert "rank 1: no collective entered yet" in text and "rank 0: all_reduce #0" in text, (
        f"want rank 1 named as outside any collective and rank 0 waiting in all_reduce #0:\n{text}")
    stack_1 = text.split("--- stack of rank 1")[-1]
    assert "rank_1_stops" in stack_1, f"want rank 1's stack in rank_1_stops:\n{text}"
    assert f"the grader stops this cell after {CELL_TIMEOUT_S} s" in head, (
        f"the first line must say the timeout was shortened to the cell's limit: {head!r}")


def test_nothing_is_clamped_outside_ipython(monkeypatch):
    monkeypatch.setenv(_budget.ENV, "5")
    got = _budget.clamp(600.0)
    assert got == (600.0, None), f"outside IPython: want (600.0, None), got {got}"


@pytest.mark.parametrize("raw", ["abc", "0", "-3", "inf"])
def test_bad_cell_timeout_is_named(monkeypatch, raw):
    monkeypatch.setenv(_budget.ENV, raw)
    with pytest.raises(ValueError, match=_budget.ENV) as info:
        _budget.cell_timeout()
    assert repr(raw) in str(info.value), f"the message must quote {raw!r}: {info.value}"
