"""Each lab's core path, counted and timed: ``python -m bench course_size`` (``--quick``: fast mode).

The counts (core exercises, student lines, words, the minutes the headings promise) come from
:mod:`autograder.coursesize`. The time is what a student's machine spends running the reference notebook
top to bottom in **full mode** (the sizes a student runs) in a plain kernel, with every cell's wall time
summed: the part of the 65-90 minutes a student waits rather than reads or writes. The same notebook in
**fast mode** (``COURSE_FAST=1``, what the grader runs) is timed beside it against DESIGN.md's budget of
45 s per lab (the homework has none: its drills are real torchrun jobs). Measured on this page's machine
(CPU, gloo); a GPU node runs the same cells on NCCL.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from bench import machine, write
from bench.mdtable import md_table

LABS = ("lab01", "lab02", "lab03", "lab04", "lab05", "homework")
FAST_BUDGET_S = 45.0  # DESIGN.md, time budgets: a lab's fast mode (the grader's run)


def run_reference(lab: str, fast: bool) -> dict[str, float | int | str]:
    """Execute ``lab``'s reference notebook (solutions + tests) once; wall seconds, slowest cell, errors."""
    from autograder.config import CourseConfig
    from autograder.kernel import plain_client
    from autograder.mutants import copy_extras
    from autograder.release import build_source_notebook

    cfg = CourseConfig(cell_timeout=1200.0, notebook_timeout=7200.0)
    nb = build_source_notebook(cfg, lab)
    slowest, errors = (0.0, ""), []
    with tempfile.TemporaryDirectory(prefix=f"size-{lab}-") as tmp:
        work = Path(tmp) / "work"
        copy_extras(cfg, lab, work)
        ev = Path(tmp) / "evidence"
        ev.mkdir()
        client = plain_client(cfg, nb, work, env={"COURSE_EVIDENCE_DIR": str(ev)}, fast=fast)
        t0 = time.monotonic()
        with client.setup_kernel():
            for i, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    continue
                c0 = time.monotonic()
                client.execute_cell(cell, i)
                dt = time.monotonic() - c0
                name = cell.metadata.get("nbgrader", {}).get("grade_id", f"cell {i}")
                if dt > slowest[0]:
                    slowest = (dt, name)
                if any(o.get("output_type") == "error" for o in cell.get("outputs", [])):
                    errors.append(name)
        total = time.monotonic() - t0
    return {"seconds": round(total, 1), "slowest cell": f"{slowest[1]} {slowest[0]:.1f} s",
            "cells that raised": ", ".join(errors) or "none"}


def main(quick: bool = False) -> None:
    import pandas as pd

    from autograder.coursesize import (
        CORE_MINUTES,
        MAX_CORE_EXERCISES,
        MAX_CORE_LINES,
        budget_problems,
        lab_size,
    )

    rows = []
    for lab in LABS:
        row: dict = {"lab": lab}
        if lab != "homework":  # the homework is a multi-session project, not a 65-90 minute lab
            size = lab_size(lab)
            row.update({k: v for k, v in size.__dict__.items() if k != "lab"})
            row["budget"] = "; ".join(budget_problems(size)) or "fits"
        load0 = os.getloadavg()[0]
        row.update(run_reference(lab, fast=quick))
        if not quick:  # the grader's fast mode beside the student's full mode, same kernel set-up
            fast = run_reference(lab, fast=True)
            row["fast seconds"] = fast["seconds"]
            row["fast cells that raised"] = fast["cells that raised"]
            if lab != "homework":
                ok = fast["seconds"] <= FAST_BUDGET_S
                row["fast budget"] = "ok" if ok else f"MISS (> {FAST_BUDGET_S:.0f} s)"
        row["load average (start)"] = round(load0, 1)
        rows.append(row)
        print(row, flush=True)
    df = pd.DataFrame(rows).set_index("lab")
    mode = (
        "fast mode (COURSE_FAST=1): a smoke run, not the student's wait"
        if quick
        else f"full mode, then fast mode (the grader's run; budget <= {FAST_BUDGET_S:.0f} s a lab)"
    )
    lo, hi = CORE_MINUTES
    text = (
        "# Course size: each lab's core path, counted and timed\n\n"
        f"Measured {machine()}. One run per lab, {mode}, reference notebook in a plain kernel.\n\n"
        f"Budget (the course brief): {lo}-{hi} minutes of core work, at most {MAX_CORE_EXERCISES} core "
        f"exercises, about 100 lines of student code (held at <= {MAX_CORE_LINES} by "
        "tests/test_time_budget.py). Student lines are the non-blank, non-comment lines of the reference's "
        "solution regions; words are the markdown a student reads on that path; stated minutes are the "
        "headings' own estimates (not yet timed with a class); seconds are the machine's share of the "
        "student's time (the reference run top to bottom, one round; on a shared box: +-20 %).\n\n"
        + md_table(df) + "\n"
    )
    write("course_size", text)


if __name__ == "__main__":
    import sys

    main(quick="--quick" in sys.argv)
