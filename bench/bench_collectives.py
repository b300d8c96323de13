"""gloo all_reduce bus bandwidth at world 2: the machine's communication ceiling that later labs compare with.

    python -m bench collectives [--quick]

Bus bandwidth as nccl-tests defines it: algbw = bytes / time, busbw = algbw * 2 (R - 1) / R for all_reduce
(what each rank's link must carry in a ring), so numbers compare across world sizes. One intra-op thread per
rank (on 2 cores, 2 ranks x 2 threads oversubscribe and halve the 1 MB figure). Each timing is rank 0's,
after a barrier, median over iterations. Writes bench/results/collectives.md.
"""

from __future__ import annotations

import logging
import sys

from bench import machine, write

log = logging.getLogger("bench.collectives")
SIZES = [4, 2**20, 16 * 2**20, 64 * 2**20]  # bytes: latency, 1 MB, 16 MB, 64 MB


def measure(sizes: list[int], iters: int, warmup: int) -> list[tuple[int, float]]:
    """Runs inside each rank; returns [(bytes, median seconds)] from rank 0's clock."""
    import statistics
    import time

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
        out.append((nbytes, statistics.median(times)))
    return out


def main(quick: bool = False) -> str:
    import course_dist

    world = 2
    iters, warmup = (3, 1) if quick else (20, 3)
    res = course_dist.launch(measure, world, args=(SIZES, iters, warmup), timeout=600, stream=False)
    factor = 2 * (world - 1) / world
    lines = [
        "# gloo all_reduce bandwidth, world 2 (communication ceiling)",
        "",
        f"Measured {machine()}; `python -m bench collectives{' --quick' if quick else ''}` "
        f"({iters} timed iterations after {warmup} warm-up, median, rank 0's clock, 1 thread per rank).",
        "",
        "| size | median time | algbw | busbw (nccl-tests) |",
        "|---|---|---|---|",
    ]
    for nbytes, sec in res[0]:
        size = f"{nbytes} B" if nbytes < 2**20 else f"{nbytes // 2**20} MB"
        algbw = nbytes / sec / 1e9
        bw = "- (latency)" if nbytes < 2**20 else f"{algbw:.2f} GB/s"
        bus = "-" if nbytes < 2**20 else f"{algbw * factor:.2f} GB/s"
        lines.append(f"| {size} | {sec * 1e3:.2f} ms | {bw} | {bus} |")
        log.info("all_reduce %s: %.2f ms", size, sec * 1e3)
    lines += ["", "busbw = algbw x 2(R-1)/R; at R = 2 the two are equal.", ""]
    text = "\n".join(lines)
    log.info("wrote %s", write("collectives", text))
    return text


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    main(quick="--quick" in sys.argv)
