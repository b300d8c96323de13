"""Lab 02 benchmark: the reference bucketed DDP, the naive per-parameter all-reduce and the ring all-reduce,
each
side by side with what a user would pick instead (torch DDP, gloo's all_reduce), in one run, as ratios.

    python -m bench.bench_ddp            # full: the lab model at full size, 16 MB ring messages (~1-2 min)
    python -c "from bench.bench_ddp import main; main(quick=True)"     # smoke run (~20 s)

Writes ``bench/results/ddp.md``. The implementations are the *reference solutions* themselves: the answer
cells of
``solutions/lab02/lab02.py`` are executed into a namespace (the notebook stays the only source of them).

Targets (issue 4): bucketed within 1.15x of torch DDP at world 2; naive visibly slower (ratio stated); ring
bus
bandwidth as a fraction of gloo's at 16 MB. Timing method: world 2, one thread per rank; each implementation
runs
``rounds`` times interleaved (A B C A B C ...) so that a busy machine slows all of them alike; a round's
number is
the slowest rank's median step; the reported number is the median over rounds.
"""

from __future__ import annotations

import logging
import math
import os
import re
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from course_dist.seed import FAST_VAR

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "solutions" / "lab02" / "lab02.py"
log = logging.getLogger("bench.ddp")


def reference(
    names: tuple[str, ...] = ("allreduce_solution", "buckets_solution", "bucketed_solution", "ring_solution"),
) -> dict[str, Any]:
    """Execute the named answer cells of the lab's source into one namespace and return it."""
    import torch
    import torch.distributed as dist
    from torch import nn

    import course_dist
    from course_dist.labkit.lab02 import MB, ContractViolation, fingerprint

    ns: dict[str, Any] = {
        "torch": torch,
        "dist": dist,
        "nn": nn,
        "math": math,
        "contextmanager": contextmanager,
        "MB": MB,
        "fingerprint": fingerprint,
        "ContractViolation": ContractViolation,
        "course_dist": course_dist,
        "__name__": "lab02_reference",
    }
    cells = re.split(r"^# %%", SOURCE.read_text(encoding="utf-8"), flags=re.M)
    found = set()
    for cell in cells:
        head, _, body = cell.partition("\n")
        m = re.search(r'"grade_id": "(\w+)"', head)
        if m and m.group(1) in names:
            exec(compile(body, f"{SOURCE}:{m.group(1)}", "exec"), ns)  # noqa: S102 - our own reference source
            found.add(m.group(1))
    missing = set(names) - found
    if missing:
        raise ValueError(f"{SOURCE} has no answer cells {sorted(missing)}")
    return ns


def _rounds(impls: dict[str, dict[str, Any]], rounds: int, steps: int, batch: int) -> dict[str, float]:
    from course_dist.labkit import lab02

    df = lab02.measure_ddp(impls, worlds=[2], steps=steps, batch=batch, rounds=rounds)
    bad = df[df["error"] != ""]
    if len(bad):
        raise RuntimeError(f"benchmark runs failed: {bad.to_dict('records')}")
    return dict(zip(df["impl"], df["step_s"], strict=True))


def main(quick: bool = False) -> dict[str, float]:
    """Run the benchmark, write ``bench/results/ddp.md`` and return the headline numbers."""
    if quick:
        os.environ[FAST_VAR] = "1"  # before the first launch: the rank server inherits it
    from course_dist.labkit import lab02

    ref = reference()
    cfg = lab02.model_config("lab")
    n_params = sum(p.numel() for p in lab02.LabNet(cfg).parameters() if p.requires_grad)
    steps, rounds, batch = (3, 2, 32) if quick else (10, 3, 64)
    t0 = time.perf_counter()
    step = _rounds(
        {
            "torch DDP": {"impl": "torch"},
            "bucketed (reference)": {"impl": "bucketed", "ddp_cls": ref["BucketedDDP"]},
            "naive (reference)": {"impl": "naive", "average_gradients": ref["average_gradients"]},
        },
        rounds,
        steps,
        batch,
    )
    sizes = [1 << 20, 16 << 20] if not quick else [1 << 20]
    bw = lab02.measure_busbw(ref["ring_all_reduce"], world=2, sizes_bytes=sizes, reps=3 if quick else 7)
    big = bw[bw["bytes"] == bw["bytes"].max()].set_index("impl")
    res = {
        "torch_ddp_step_s": step["torch DDP"],
        "bucketed_step_s": step["bucketed (reference)"],
        "naive_step_s": step["naive (reference)"],
        "bucketed_over_torch": step["bucketed (reference)"] / step["torch DDP"],
        "naive_over_bucketed": step["naive (reference)"] / step["bucketed (reference)"],
        "ring_busbw_GBps": float(big.loc["ring", "busbw_GBps"]),
        "gloo_busbw_GBps": float(big.loc["gloo", "busbw_GBps"]),
    }
    res["ring_over_gloo_busbw"] = res["ring_busbw_GBps"] / res["gloo_busbw_GBps"]
    elapsed = time.perf_counter() - t0
    mb = int(bw["bytes"].max()) >> 20
    from bench import machine, write

    lines = [
        "# Lab 02 - DDP under the hood (bench/bench_ddp.py)",
        "",
        f"{'QUICK smoke run - not a measurement' if quick else 'Full run'}; world 2, gloo, 1 thread per "
        f"rank; lab model {cfg} = {n_params / 1e6:.2f} M trainable parameters, batch {batch} per rank, "
        f"{steps} timed steps x {rounds} interleaved rounds (median); {elapsed:.0f} s.",
        "",
        f"Machine: {machine()}.",
        "",
        "| implementation | s / step (world 2) | ratio |",
        "|---|---|---|",
        f"| torch DDP | {res['torch_ddp_step_s']:.4f} | 1.00 |",
        f"| bucketed (reference, exercise 4) | {res['bucketed_step_s']:.4f} | "
        f"{res['bucketed_over_torch']:.2f} x torch DDP (target <= 1.15) |",
        f"| naive per-parameter all-reduce (exercise 2) | {res['naive_step_s']:.4f} | "
        f"{res['naive_over_bucketed']:.2f} x bucketed |",
        "",
        f"| all-reduce, {mb} MB, world 2 | bus bandwidth (GB/s) |",
        "|---|---|",
        f"| gloo all_reduce | {res['gloo_busbw_GBps']:.3f} |",
        f"| ring from send/recv (reference, exercise 3) | {res['ring_busbw_GBps']:.3f} "
        f"({res['ring_over_gloo_busbw']:.2f} of gloo) |",
        "",
    ]
    path = write("ddp", "\n".join(lines))
    log.info("wrote %s: %s", path, res)
    return res


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    print(main(quick="--quick" in sys.argv[1:]))
