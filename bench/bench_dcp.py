"""DCP on a sharded (FSDP2) state at world 2: the training stall of ``dcp.async_save`` against a blocking
``dcp.save``, and the load at another world size (resharding) against the load at the same one.

    python -m bench dcp [--quick]

The machinery is lab 04's (``course_dist.labkit.lab04.dcpstall``, stretch C's model): per round and rank,
5 plain steps (the baseline), one blocking save and one asynchronous save, their order alternating per round.
The blocking save's stall is the time ``dcp.save`` blocked; the asynchronous save's is the time
``async_save`` blocked (the CPU copy) plus the excess over the baseline of the steps taken while the
background write ran (it shares the two CPUs and the disk). Rank 0's view (both ranks meet at every save).
Loads: saved once at world 2, loaded by a fresh model at world 2 (no resharding), 1 and 3, rounds
interleaved, the slowest rank's time. CPU + gloo + this disk only: a GPU's device-to-host copy and a
parallel file system are not in these numbers.

Target (issue 26 item 5): the asynchronous save stalls training less than the blocking save (median ratio
blocking / async stall > 1). Writes bench/results/dcp.md.
"""

from __future__ import annotations

import os
import time
from typing import Any

SIZES = ((1024, 3), (2048, 3))  # (width, depth): ~25 MB and ~100 MB of model + AdamW state in all
QUICK_SIZES = ((256, 2),)


def _spread(xs: Any) -> str:
    xs = sorted(float(x) for x in xs)
    return f"{xs[0] * 1e3:.1f} / {xs[len(xs) // 2] * 1e3:.1f} / {xs[-1] * 1e3:.1f}"


def main(quick: bool = False) -> dict[str, Any]:
    """Run the benchmark, write ``bench/results/dcp.md`` and return the headline numbers."""
    from bench import machine, write
    from course_dist.labkit.lab04 import dcpstall

    load_before = os.getloadavg()
    t0 = time.perf_counter()
    rounds = 3 if quick else 7
    sizes = QUICK_SIZES if quick else SIZES
    stall_rows, res = [], {}
    for width, depth in sizes:
        df = dcpstall.measure_stall(width=width, depth=depth, rounds=rounds, steps=5)
        ratio = df["sync_blocked_s"] / df["async_stall_s"]
        mb = float(df["bytes_per_rank"].iloc[0]) / 1e6
        res[f"ratio_{width}x{depth}"] = float(ratio.median())
        verdict = "met" if ratio.median() > 1 else "MISS"
        stall_rows.append(
            f"| {width}x{depth} ({mb:.1f} MB/rank) | {_spread(df['step_s'])} | "
            f"{_spread(df['sync_blocked_s'])} | {_spread(df['async_blocked_s'])} | "
            f"{_spread(df['async_stall_s'])} | {_spread(df['async_write_s'])} | "
            f"{df['steps_during_write'].median():.0f} | {ratio.min():.2f} / {ratio.median():.2f} / "
            f"{ratio.max():.2f} ({verdict}) |"
        )
    width, depth = sizes[-1]
    loads = dcpstall.measure_load(worlds=(2, 1, 3), width=width, depth=depth, rounds=2 if quick else 5)
    load_rows = []
    same = loads[loads["world"] == 2]["load_s"].median()
    for w in (2, 1, 3):
        xs = loads[loads["world"] == w]["load_s"]
        res[f"load_world{w}_s"] = float(xs.median())
        load_rows.append(f"| 2 -> {w} | {_spread(xs)} | {xs.median() / same:.2f} |")
    elapsed = time.perf_counter() - t0
    load_after = os.getloadavg()
    lines = [
        "# DCP: async_save stall vs a blocking save, resharded load (bench/bench_dcp.py)",
        "",
        f"{'QUICK smoke run - not a measurement' if quick else 'Full run'}; world 2, gloo, CPU only, "
        f"1 thread per rank; {rounds} interleaved rounds per size, {elapsed:.0f} s. Load average (1 min) "
        f"{load_before[0]:.1f} before, {load_after[0]:.1f} after. Machine: {machine()}.",
        "",
        "Times in ms as min / median / max over the rounds. stall = what the training loop lost to the "
        "save: the blocking save's whole duration; for async_save the CPU copy plus the slowdown of the "
        "steps taken while the background thread wrote.",
        "",
        "| model (width x depth) | plain step | blocking dcp.save | async_save returns | async stall | "
        "async write (to future done) | steps during write | blocking / async stall (target > 1) |",
        "|---|---|---|---|---|---|---|---|",
        *stall_rows,
        "",
        f"Resharded load ({width}x{depth}, saved at world 2, fresh model from another seed; slowest rank, "
        "min / median / max ms):",
        "",
        "| save -> load world | load time | vs world 2 (median) |",
        "|---|---|---|",
        *load_rows,
        "",
        "Not GPU figures: on a GPU node async_save's copy is device-to-host and the background write does "
        "not compete with the training math for these two CPUs; neither is measured here (`python -m bench "
        "gpu` does not cover DCP yet).",
    ]
    write("dcp", "\n".join(lines) + "\n")
    return res


if __name__ == "__main__":
    print(main())
