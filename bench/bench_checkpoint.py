"""Checkpoint cost on this machine: the lab's atomic save beside what a user would pick instead.

    python -m bench checkpoint [--quick]

Same state every time (an MLP's weights + AdamW moments after one step). Compared, medians over repeats:
- ``torch.save(state, path)``: the plain save (no fsync: the data may still sit in the page cache);
- the same plus ``fsync`` (a *durable* plain save: the fair baseline for anything crash-safe);
- the lab 04 reference ``save_checkpoint`` (temp dir, fsync, sha256 manifest, rename, latest; loaded from
  ``solutions/lab04/lab04.py``, so the benchmark measures exactly what the notebook ships);
- ``torch.distributed.checkpoint.save`` (DCP, single process);
- an asynchronous save: stage a CPU copy (the only stall training sees), write it with the atomic save in a
  background thread;
- recovery at world 2: the reference supervisor, rank 1 SIGKILLed at step 5 (kill -> first resumed step).
Writes bench/results/checkpoint.md.
"""

from __future__ import annotations

import logging
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench import machine, write

log = logging.getLogger("bench.checkpoint")
SOURCE = Path(__file__).resolve().parents[1] / "solutions" / "lab04" / "lab04.py"


def reference(*grade_ids: str) -> dict[str, Any]:
    """Execute the setup cell and the named answer cells of the lab 04 reference; return their namespace."""
    cells = [c for c in re.split(r"(?m)^(?=# %%)", SOURCE.read_text()) if c.startswith("# %%")]
    ns: dict[str, Any] = {"__name__": "lab04_reference"}
    setup = next(c for c in cells if "WORK = Path(tempfile.mkdtemp" in c)
    exec(compile(setup.split("\n", 1)[1], str(SOURCE), "exec"), ns)  # noqa: S102 - our own reference source
    shutil.rmtree(ns["WORK"], ignore_errors=True)
    for gid in grade_ids:
        cell = next(c for c in cells if f'"grade_id": "{gid}"' in c.splitlines()[0])
        exec(compile(cell.split("\n", 1)[1], str(SOURCE), "exec"), ns)  # noqa: S102
    return ns


def make_state(width: int, depth: int) -> dict[str, Any]:
    import torch

    torch.manual_seed(0)
    layers = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers)
    opt = torch.optim.AdamW(model.parameters())
    model(torch.randn(4, width)).sum().backward()
    opt.step()
    return {"model": model.state_dict(), "optimizer": opt.state_dict()}


def timed(fn: Any, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(quick: bool = False) -> str:
    import os

    import torch
    import torch.distributed.checkpoint as dcp

    from course_dist import Fault
    from course_dist.labkit import lab04

    torch.set_num_threads(1)
    width, depth, repeats = (512, 4, 2) if quick else (2048, 6, 5)
    state = make_state(width, depth)
    nbytes = sum(t.numel() * t.element_size() for t in state["model"].values()) * 3  # weights + 2 moments
    ref = reference("atomic_solution", "recovery_solution")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-ckpt-") as tmp:
        root = Path(tmp)
        counter = iter(range(10**6))

        def plain() -> None:
            torch.save(state, root / "plain.pt")

        def plain_fsync() -> None:
            with open(root / "plain_fsync.pt", "wb") as f:
                torch.save(state, f)
                f.flush()
                os.fsync(f.fileno())

        def atomic() -> None:
            ref["save_checkpoint"](root / "atomic", next(counter), state, keep=2)

        def dcp_save() -> None:
            dcp.save(state, checkpoint_id=str(root / f"dcp-{next(counter)}"))

        results = {name: timed(fn, repeats) for name, fn in
                   [("torch.save", plain), ("torch.save + fsync", plain_fsync), ("atomic (lab 04)", atomic),
                    ("DCP save", dcp_save)]}
        stalls, writes = [], []
        for _ in range(repeats):  # asynchronous: the loop waits only for the staging copy
            t0 = time.perf_counter()
            snap = lab04.to_cpu(state)
            stalls.append(time.perf_counter() - t0)
            t1 = time.perf_counter()
            th = threading.Thread(target=ref["save_checkpoint"], args=(root / "async", next(counter), snap),
                                  kwargs={"keep": 2})
            th.start()
            th.join()  # a trainer would join before its next save; joined here to time the write
            writes.append(time.perf_counter() - t1)
        results["async: stall (staging copy)"] = statistics.median(stalls)
        results["async: background write"] = statistics.median(writes)
        cfg = lab04.Config(stateless_rng=True)
        (root / "recovery").mkdir()
        rep = ref["supervise"](cfg, str(root / "recovery"), 9, 3, faults=[Fault("kill", rank=1, step=5)])
    base = results["torch.save"]
    for name, sec in results.items():
        rows.append(f"| {name} | {sec:.3f} s | {nbytes / sec / 1e6:.0f} MB/s | {base / sec:.2f}x |"
                    if not name.startswith("async") else f"| {name} | {sec:.3f} s | - | - |")
    atomic_ratio = base / results["atomic (lab 04)"]
    durable_ratio = results["torch.save + fsync"] / results["atomic (lab 04)"]
    stall_ratio = results["async: stall (staging copy)"] / results["atomic (lab 04)"]
    lines = [
        "# Checkpoint save cost: atomic (lab 04) vs torch.save vs DCP; async stall; recovery",
        "",
        f"Measured {machine()}; `python -m bench checkpoint{' --quick' if quick else ''}`; state "
        f"{nbytes / 1e6:.1f} MB (MLP {depth} x {width}^2 + AdamW moments), median of {repeats}, one thread.",
        "",
        "| save | median time | throughput | vs torch.save |",
        "|---|---|---|---|",
        *rows,
        "",
        f"- atomic / plain torch.save throughput: **{atomic_ratio:.2f}x** (target >= 0.8x: "
        f"{'met' if atomic_ratio >= 0.8 else 'NOT met'}); vs torch.save + fsync: **{durable_ratio:.2f}x** "
        "(the atomic save pays the same fsync plus a sha256 pass and a staging rename).",
        f"- async stall / synchronous atomic save: **{stall_ratio:.2f}** (target <= 0.25: "
        f"{'met' if stall_ratio <= 0.25 else 'NOT met'}).",
        f"- recovery at world 2 (rank 1 SIGKILLed at step 5, checkpoint every 3): "
        f"**{rep.recovery_s[0]:.2f} s** from the last step before the kill to the first resumed step, "
        f"{rep.lost_steps[0]} steps recomputed, {rep.restarts} restart, wall {rep.wall_s:.1f} s.",
        "",
    ]
    text = "\n".join(lines)
    log.info("wrote %s", write("checkpoint", text))
    return text


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    sys.stdout.write(main(quick="--quick" in sys.argv))
