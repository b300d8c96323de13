"""What a launch needs after its own deadline: the margin ``course_dist._budget`` keeps before a cell's limit.

    python -m bench timeout_margin            # 5 hangs per world (2 and 4), under load (two `yes` loops)
    python -m bench timeout_margin --quick    # 2 hangs per world

A graded cell's launch must raise LaunchTimeout (naming the stuck rank) before the grader's per-cell limit
interrupts the kernel. After the launcher's deadline it still asks every rank for a stack dump, waits for the
dumps, SIGTERMs and SIGKILLs the ranks, reaps them, reads their records and raises; then IPython formats the
error and the kernel sends its reply. Two clocks, each with the last rank hung in ``time.sleep`` and the
others waiting for it in ``all_reduce``:

- launcher: from the moment the wait loop sees the deadline until ``launch`` has raised (its cleanup done);
- through nbclient: from that same moment until the kernel sends the cell's ``execute_reply`` (the message
  nbclient's per-cell clock waits for).

Both are measured while two ``yes > /dev/null`` loops keep the cores busy (the loaded box of issue 27);
they are stopped afterwards. Writes bench/results/timeout_margin.md.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

from bench import machine, write

log = logging.getLogger("bench.timeout_margin")
WORLDS = (2, 4)
LAUNCH_TIMEOUT_S = 2.0
REPO = Path(__file__).resolve().parents[1]

# Runs in a fresh interpreter (the launcher's clock) and in a kernel (the nbclient clock). The wait loop's
# _timeout is wrapped only to read the clock when the deadline is seen; the launch itself is unchanged.
HANG = """
import time
import torch
import torch.distributed as dist
import course_dist
import course_dist._wait as _w

DEADLINE_SEEN = []
_orig_timeout = _w._timeout

def _seen(*a, **k):
    DEADLINE_SEEN.append((time.monotonic(), time.time()))
    return _orig_timeout(*a, **k)

_w._timeout = _seen

def hang():
    if course_dist.rank() == course_dist.world_size() - 1:
        time.sleep(3600)  # the stuck rank
    t = torch.ones(1)
    dist.all_reduce(t)  # the others wait for it here
    return t.item()
"""

LAUNCHER = (
    HANG
    + """
import json, sys
world, reps, timeout = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
course_dist.launch(lambda: 1, world, stream=False)  # warm the forkserver: the clock is about the teardown
out = []
for _ in range(reps):
    try:
        course_dist.launch(hang, world, timeout=timeout, stream=False)
    except course_dist.LaunchTimeout as exc:
        raised = time.monotonic()
        assert exc.stacks, exc
    out.append(raised - DEADLINE_SEEN[-1][0])
print("JSON" + json.dumps(out))
"""
)


def _launcher(world: int, reps: int) -> list[float]:
    proc = subprocess.run(
        [sys.executable, "-c", LAUNCHER, str(world), str(reps), str(LAUNCH_TIMEOUT_S)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
    )
    line = next((x for x in proc.stdout.splitlines() if x.startswith("JSON")), None)
    if line is None:
        raise RuntimeError(f"launcher bench failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(line[4:])


def _nbclient(world: int, reps: int) -> list[float]:
    import nbformat
    from nbclient import NotebookClient

    cells = [nbformat.v4.new_code_cell(HANG + f"course_dist.launch(lambda: 1, {world}, stream=False)")]
    hang = f"course_dist.launch(hang, {world}, timeout={LAUNCH_TIMEOUT_S})"
    cells += [nbformat.v4.new_code_cell(hang) for _ in range(reps)]
    report = "import json\nprint('JSON' + json.dumps([w for _, w in DEADLINE_SEEN]))"
    cells.append(nbformat.v4.new_code_cell(report))
    nb = nbformat.v4.new_notebook(cells=cells)
    client = NotebookClient(
        nb,
        timeout=120,
        allow_errors=True,
        record_timing=True,
        kernel_name="python3",
        resources={"metadata": {"path": str(REPO)}},
    )
    client.execute()
    seen = json.loads(next(o["text"] for o in nb.cells[-1].outputs if "JSON" in o.get("text", ""))[4:])
    out = []
    for cell, wall in zip(nb.cells[1:-1], seen, strict=True):
        assert any(o.get("ename") == "LaunchTimeout" for o in cell.outputs), cell.outputs
        reply = cell.metadata["execution"]["shell.execute_reply"]
        from datetime import datetime

        out.append(datetime.fromisoformat(reply.replace("Z", "+00:00")).timestamp() - wall)
    return out


def main(quick: bool = False) -> Path:
    reps = 2 if quick else 5
    hogs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(2)]
    try:
        time.sleep(1.0)
        rows = []
        for world in WORLDS:
            for clock, fn in (("launcher", _launcher), ("through nbclient", _nbclient)):
                t = fn(world, reps)
                log.info("world %d, %s: %s", world, clock, [round(x, 3) for x in t])
                rows.append((world, clock, t))
        load = os.getloadavg()[0]
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    lines = [
        "## Launch timeout margin (the time a hang's report needs after the launcher's deadline)",
        "",
        f"Measured {machine()}; load average during the run {load:.1f} (two `yes > /dev/null` loops); "
        f"`python -m bench timeout_margin{' --quick' if quick else ''}`. Launch timeout "
        f"{LAUNCH_TIMEOUT_S:g} s, {reps} hangs per row; the last rank sleeps, the others wait in all_reduce.",
        "",
        "| world | clock | min s | median s | max s |",
        "|---|---|---|---|---|",
    ]
    for world, clock, t in rows:
        s = sorted(t)
        lines.append(f"| {world} | {clock} | {s[0]:.2f} | {s[len(s) // 2]:.2f} | {s[-1]:.2f} |")
    worst = max(max(t) for _, _, t in rows)
    lines += [
        "",
        f"Worst case {worst:.2f} s. `course_dist._budget.MARGIN_S` keeps the launcher's deadline that far "
        "(with a cushion) before a graded cell's limit, so a hang ends as LaunchTimeout naming the stuck "
        "rank.",
        "",
    ]
    path = write("timeout_margin", "\n".join(lines))
    log.info("wrote %s", path)
    return path


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    main(quick="--quick" in sys.argv)
