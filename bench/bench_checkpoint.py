"""Checkpoint cost on this machine: the lab's atomic save beside what a user would pick instead.

    python -m bench checkpoint [--quick]

Same state for every contender (an MLP's weights + AdamW moments after one step), at two or three sizes: the
fixed costs (seven fsyncs, two renames, a directory listing) weigh on 13 MB and amortize on 100 MB and more.
All contenders write into one directory on one file system; the repeats are interleaved round-robin (the
order rotates each round) so a noisy neighbour hits every contender alike; medians are reported. Compared:
- ``torch.save(state, path)``: the plain save (no fsync: the data may still sit in the page cache);
- the same plus ``fsync`` (a *durable* plain save: the fair baseline for anything crash-safe);
- the lab 04 reference ``save_checkpoint`` (each part serialised into memory and written through a Python
  file object, every file fsynced, sha256 manifest last, directory fsyncs, rename, atomic ``latest``;
  retention checks older checkpoints' manifests and sizes and deletes only complete older ones; loaded from
  ``solutions/lab04/lab04.py``, so the benchmark measures exactly what the notebook ships), once with keep=2
  (each save also deletes the checkpoint that falls out of ``keep``) and once without deletion (keep large:
  the difference is what the deletion costs);
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

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


def timed(
    fns: dict[str, Callable[[], Any]], repeats: int, cleanup: Callable[[], None] = lambda: None
) -> dict[str, float]:
    """Median seconds of each of ``fns`` over ``repeats`` interleaved rounds (order rotates each round)."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    for i in tqdm(range(repeats), desc="checkpoint bench rounds", leave=False):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            t0 = time.perf_counter()
            fns[name]()
            times[name].append(time.perf_counter() - t0)
            cleanup()  # untimed: drop what a contender left that the next round must not find
    return {name: statistics.median(ts) for name, ts in times.items()}


def main(quick: bool = False) -> str:
    import os

    import torch
    import torch.distributed.checkpoint as dcp

    from course_dist import Fault
    from course_dist.labkit import lab04

    torch.set_num_threads(1)
    sizes, repeats = ([(512, 4), (1024, 8)], 5) if quick else ([(512, 4), (1024, 8), (2048, 6)], 7)
    ref = reference("atomic_solution", "recovery_solution")
    save = ref["save_checkpoint"]
    rows, summary = [], []
    with tempfile.TemporaryDirectory(prefix="bench-ckpt-") as tmp:
        root = Path(tmp)
        counter = iter(range(10**6))
        for width, depth in sizes:
            state = make_state(width, depth)
            nbytes = (
                sum(t.numel() * t.element_size() for t in state["model"].values()) * 3
            )  # weights + 2 moments

            def plain_fsync(state: dict[str, Any] = state) -> None:
                with open(root / "plain_fsync.pt", "wb") as f:
                    torch.save(state, f)
                    f.flush()
                    os.fsync(f.fileno())

            def cleanup() -> None:
                for d in root.glob("dcp-*"):
                    shutil.rmtree(d)
                unpruned = sorted((root / "atomic-nokeep").glob("step-*"))
                for d in unpruned[:-2]:  # keep the directory as full as the keep=2 contender's
                    shutil.rmtree(d)

            fns = {
                "torch.save": lambda state=state: torch.save(state, root / "plain.pt"),
                "torch.save + fsync": plain_fsync,
                "atomic (lab 04), keep=2": lambda state=state: save(
                    root / "atomic", next(counter), state, keep=2
                ),
                "atomic (lab 04), no deletion": lambda state=state: save(
                    root / "atomic-nokeep", next(counter), state, keep=10**6
                ),
                "DCP save": lambda state=state: dcp.save(
                    state, checkpoint_id=str(root / f"dcp-{next(counter)}")
                ),
            }
            res = timed(fns, repeats, cleanup)
            base, durable = res["torch.save"], res["torch.save + fsync"]
            for name, sec in res.items():
                rows.append(
                    f"| {nbytes / 1e6:.0f} MB | {name} | {sec * 1e3:.0f} ms | {nbytes / sec / 1e6:.0f} MB/s "
                    f"| {base / sec:.2f}x | {durable / sec:.2f}x |"
                )
            summary.append(
                (
                    nbytes,
                    base / res["atomic (lab 04), keep=2"],
                    durable / res["atomic (lab 04), keep=2"],
                    base / res["atomic (lab 04), no deletion"],
                    base / durable,
                )
            )
            for d in ("atomic", "atomic-nokeep"):
                shutil.rmtree(root / d, ignore_errors=True)
        stalls, writes = [], []
        for _ in range(
            repeats
        ):  # asynchronous, on the largest state: the loop waits only for the staging copy
            t0 = time.perf_counter()
            snap = lab04.to_cpu(state)
            stalls.append(time.perf_counter() - t0)
            t1 = time.perf_counter()
            th = threading.Thread(target=save, args=(root / "async", next(counter), snap), kwargs={"keep": 2})
            th.start()
            th.join()  # a trainer would join before its next save; joined here to time the write
            writes.append(time.perf_counter() - t1)
        stall, write_s = statistics.median(stalls), statistics.median(writes)
        cfg = lab04.Config(stateless_rng=True)
        (root / "recovery").mkdir()
        rep = ref["supervise"](cfg, str(root / "recovery"), 9, 3, faults=[Fault("kill", rank=1, step=5)])
    big, ratio, vs_durable, no_del, fsync_ratio = summary[-1]
    lines = [
        "# Checkpoint save cost: atomic (lab 04) vs torch.save vs DCP; async stall; recovery",
        "",
        f"Measured {machine()}; `python -m bench checkpoint{' --quick' if quick else ''}`; states: MLP "
        f"{', '.join(f'{d} x {w}^2' for w, d in sizes)} + AdamW moments; median of {repeats} interleaved "
        "rounds, one thread, one directory on one file system.",
        "",
        "| state | save | median time | throughput | vs torch.save | vs torch.save + fsync |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        *(
            f"- {n / 1e6:.0f} MB: atomic / torch.save **{r:.2f}x** (without deleting the old checkpoint "
            f"{nd:.2f}x); atomic / torch.save + fsync **{d:.2f}x**; torch.save + fsync / torch.save {f:.2f}x."
            for n, r, d, nd, f in summary
        ),
        f"- target (atomic >= 0.8x torch.save, judged on the largest state, {big / 1e6:.0f} MB): "
        f"**{'met' if ratio >= 0.8 else 'NOT met'}** ({ratio:.2f}x). The floor is the durable plain save: "
        f"fsync alone costs torch.save {1 - fsync_ratio:.0%} of its throughput here, and no "
        "crash-safe save can skip it.",
        f"- async stall / synchronous atomic save ({big / 1e6:.0f} MB): **{stall / write_s:.2f}** "
        f"(stall {stall * 1e3:.0f} ms, background write {write_s * 1e3:.0f} ms; target <= 0.25: "
        f"{'met' if stall / write_s <= 0.25 else 'NOT met'}).",
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
