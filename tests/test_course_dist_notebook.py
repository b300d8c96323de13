"""launch from a real Jupyter kernel (nbclient): cell-defined functions, cell tracebacks, streams, interrupt.

Run: .venv/bin/python -m pytest tests/test_course_dist_notebook.py -x
"""

from __future__ import annotations

import json
import pathlib
import time

import psutil
import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

REPO = pathlib.Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.usefixtures("no_surviving_children")

DEFINE = """
import os, torch, torch.distributed as dist, course_dist

def work(scale):
    t = torch.ones(2) * (course_dist.rank() + 1) * scale
    dist.all_reduce(t)
    print(f"rank says {course_dist.rank()}")
    return t.tolist()

def broken():
    x = course_dist.rank()
    if x == 1:
        raise ZeroDivisionError("cell bug on rank 1")  # the line the traceback must show
    dist.barrier()
"""

RUN_OK = "res = course_dist.launch(work, 2, args=(2.0,), timeout=60)\nprint('RESULT', res)"

RUN_BROKEN = """
try:
    course_dist.launch(broken, 2, timeout=60)
except course_dist.RankError as e:
    print("RANK", e.rank)
    print(e.remote_traceback)
"""


def _text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")


HANG = """
def stuck(path):
    with open(f"{path}.{course_dist.rank()}", "w") as f:
        f.write(str(os.getpid()))
    time.sleep(600)
course_dist.launch(stuck, 2, args=(PIDS,), timeout=600)
"""

SURVIVORS = """
import json, psutil
from course_dist import _mp
kids = [p.pid for p in psutil.Process().children(recursive=True)
        if p.pid != _mp.forkserver_pid() and p.status() != psutil.STATUS_ZOMBIE
        and "resource_tracker" not in " ".join(p.cmdline())]
print("KIDS", json.dumps(kids))
"""


def test_notebook_cell_functions_tracebacks_streams_and_interrupt(tmp_path):
    # One kernel for all checks: starting a kernel and importing torch is most of this test's time.
    pids = tmp_path / "pid"
    cells = [DEFINE + "\nimport time", RUN_OK, RUN_BROKEN, HANG.replace("PIDS", repr(str(pids))), SURVIVORS]
    nb = new_notebook(cells=[new_code_cell(c) for c in cells])
    client = NotebookClient(
        nb,
        kernel_name="python3",
        interrupt_on_timeout=True,
        allow_errors=True,
        resources={"metadata": {"path": str(REPO)}},
        timeout_func=lambda cell: 5 if "stuck" in cell.source else 120,  # the hang cell is interrupted
    )
    client.execute()
    for i in (0, 1, 2, 4):
        assert not [o for o in nb.cells[i].outputs if o.get("output_type") == "error"], (
            i,
            nb.cells[i].outputs,
        )

    ok = _text(nb.cells[1])
    assert "RESULT [[6.0, 6.0], [6.0, 6.0]]" in ok, ok
    assert "[rank 0] rank says 0" in ok and "[rank 1] rank says 1" in ok, ok

    broken = _text(nb.cells[2])
    assert "RANK 1" in broken, broken
    # the ipykernel cell file, the line number within the cell (IPython drops DEFINE's leading blank line) and
    # its source line; the traceback is reported once, by the launcher, not streamed above it as well
    assert "ipykernel_" in broken and "line 12, in broken" in broken, broken
    assert broken.count("Traceback (most recent call last)") == 1, broken
    assert 'raise ZeroDivisionError("cell bug on rank 1")' in broken, broken

    # "interrupt kernel" on a hung launch: KeyboardInterrupt in the cell, and no rank survives it
    assert any(o.get("ename") == "KeyboardInterrupt" for o in nb.cells[3].outputs), nb.cells[3].outputs
    rank_pids = [int((tmp_path / f"pid.{r}").read_text()) for r in range(2)]
    out = _text(nb.cells[4])
    assert json.loads(out.split("KIDS", 1)[1]) == [], out
    end = time.monotonic() + 5
    while time.monotonic() < end and any(_alive(p) for p in rank_pids):
        time.sleep(0.1)
    assert not [p for p in rank_pids if _alive(p)], rank_pids


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
