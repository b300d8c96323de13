"""gloo all_reduce time and bus bandwidth at world 1-4: the machine's communication ceiling that later labs
compare with.

    python -m bench collectives [--quick]

Bus bandwidth as nccl-tests defines it: algbw = bytes / time, busbw = algbw * 2 (R - 1) / R for all_reduce
(what each rank's link must carry in a ring), so numbers compare across world sizes (at R = 1 nothing moves:
the row is the call's floor). One intra-op thread per rank (on 2 cores, 2 ranks x 2 threads oversubscribe).
Each timing: a barrier, then one all_reduce; per rank the median over iterations, then the slowest rank.
Rounds interleave the world sizes (1 2 3 4 1 2 3 4 ...) so a neighbour's burst slows all of them alike;
the page reports min / median / max over rounds. World 3 and 4 run more ranks than this machine's 2 cores:
they measure oversubscription as much as gloo. Writes bench/results/collectives.md and collectives.png.
"""

from __future__ import annotations

import logging
import os
import statistics
import sys
import time

from bench import machine, plot_curves, spread, write

log = logging.getLogger("bench.collectives")
SIZES = [4, 2**20, 16 * 2**20, 64 * 2**20]  # bytes: latency, 1 MB, 16 MB, 64 MB
WORLDS = (1, 2, 3, 4)


def measure(sizes: list[int], iters: int, warmup: int) -> list[tuple[int, float]]:
    """Runs inside each rank; returns [(bytes, median seconds over iterations, slowest rank)]."""
    import torch
    import torch.distributed as dist

    out = []
    for nbytes in sizes:
        t = torch.ones(max(1, nbytes // 4), dtype=torch.float32)
        times = []
        for i in range(warmup + iters):
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(t)
            if i >= warmup:
                times.append(time.perf_counter() - t0)
        slowest = torch.tensor([statistics.median(times)], dtype=torch.float64)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        out.append((nbytes, float(slowest)))
    return out


def _size(nbytes: int) -> str:
    return f"{nbytes} B" if nbytes < 2**20 else f"{nbytes // 2**20} MB"


def main(quick: bool = False) -> str:
    import course_dist

    worlds, sizes = ((1, 2), SIZES[:2]) if quick else (WORLDS, SIZES)
    rounds, iters, warmup = (2, 3, 1) if quick else (5, 10, 2)
    load0, t0 = os.getloadavg()[0], time.perf_counter()
    secs: dict[tuple[int, int], list[float]] = {(w, s): [] for w in worlds for s in sizes}
    for r in range(rounds):
        for w in worlds:
            for nbytes, sec in course_dist.launch(measure, w, args=(sizes, iters, warmup), timeout=600,
                                                  stream=False)[0]:
                secs[(w, nbytes)].append(sec)
        log.info("round %d/%d done", r + 1, rounds)
    load1 = os.getloadavg()[0]
    lines = [
        "# gloo all_reduce time and bus bandwidth, world 1-4 (communication ceiling)",
        "",
        f"Measured {machine()} (load average {load0:.1f} before, {load1:.1f} after); "
        f"`python -m bench collectives{' --quick' if quick else ''}`: {rounds} rounds interleaving the world "
        f"sizes, each {iters} timed all_reduces after {warmup} warm-up per size (median per rank, slowest "
        f"rank); {time.perf_counter() - t0:.0f} s in all. min / median / max over rounds. gloo over loopback "
        "on 2 CPU cores, 1 thread per rank: not a GPU/NCCL figure; world 3 and 4 oversubscribe the cores."
        + (" **Quick run: a smoke test, not a figure to quote.**" if quick else ""),
        "",
        "| world | size | time (ms) | algbw (GB/s) | busbw (GB/s, nccl-tests) |",
        "|---|---|---|---|---|",
    ]
    curves: dict[str, dict[int, list[float]]] = {}
    for w in worlds:
        for nbytes in sizes:
            v = secs[(w, nbytes)]
            alg = [nbytes / s / 1e9 for s in v]
            bus = [a * 2 * (w - 1) / w for a in alg]
            big = nbytes >= 2**20
            lines.append(
                f"| {w} | {_size(nbytes)} | {spread([s * 1e3 for s in v], '{:.2f}')} | "
                f"{spread(alg, '{:.2f}') if big and w > 1 else '-'} | "
                f"{spread(bus, '{:.2f}') if big and w > 1 else '-'} |"
            )
            if big and w > 1:
                curves.setdefault(f"busbw {_size(nbytes)}", {})[w] = bus
    lines += [
        "",
        "busbw = algbw x 2(R-1)/R; at R = 2 the two are equal; at R = 1 gloo moves nothing (the time is the "
        "call's floor).",
        "",
        "![busbw against world size](collectives.png)",
        "",
    ]
    plot_curves("collectives", curves, ylabel="bus bandwidth (GB/s)",
                title="gloo all_reduce busbw (median, min-max band)")
    text = "\n".join(lines)
    log.info("wrote %s", write("collectives", text))
    return text


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    main(quick="--quick" in sys.argv)
