"""Launch-to-results time of a trivial all_reduce: course_dist.launch vs mp.spawn vs torchrun.

    python -m bench launch            # full: 10 warm course_dist calls, 3 spawn/torchrun, world 2 and 4
    python -m bench launch --quick    # smoke run (1-3 repeats)

What is timed, for each tool, is what a user waits for: from the call to having the ranks' results, in a
process that has already imported torch (a notebook kernel). course_dist runs in a fresh interpreter so its
first call (which starts the forkserver) is a true first call; its warm calls follow in the same interpreter.
mp.spawn uses a fresh FileStore per call (no fixed port); torchrun runs ``--standalone`` with a plain env://
script. Writes bench/results/launch.md.
"""

from __future__ import annotations

import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import machine, write

log = logging.getLogger("bench.launch")
WORLDS = (2, 4)

COURSE_DIST_SCRIPT = """
import json, sys, time, torch, torch.distributed as dist
import course_dist

def trivial():
    t = torch.ones(1)
    dist.all_reduce(t)
    return t.item()

if __name__ == "__main__":
    world, warm = int(sys.argv[1]), int(sys.argv[2])
    times = []
    for _ in range(warm + 1):
        t0 = time.perf_counter()
        res = course_dist.launch(trivial, world, stream=False)
        times.append(time.perf_counter() - t0)
        assert res == [float(world)] * world, res
    print("JSON" + json.dumps({"first": times[0], "warm": times[1:]}))
"""

TORCHRUN_SCRIPT = """
import torch, torch.distributed as dist
dist.init_process_group("gloo")
t = torch.ones(1)
dist.all_reduce(t)
assert t.item() == dist.get_world_size()
dist.destroy_process_group()
"""


def _spawn_worker(rank: int, world: int, init_file: str) -> None:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    t = torch.ones(1)
    dist.all_reduce(t)
    assert t.item() == world
    dist.destroy_process_group()


def time_course_dist(world: int, warm: int, tmp: Path) -> dict:
    script = tmp / "cd_launch.py"
    script.write_text(COURSE_DIST_SCRIPT)
    out = subprocess.run(
        [sys.executable, str(script), str(world), str(warm)],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    ).stdout
    return json.loads(out.split("JSON", 1)[1])


def time_spawn(world: int, repeats: int, tmp: Path) -> list[float]:
    import torch  # noqa: F401 - the user's process has torch imported already; do not time that import
    import torch.multiprocessing as mp

    times = []
    for i in range(repeats):
        init_file = str(tmp / f"spawn_store_{world}_{i}")  # fresh per call: a stale file store hangs the next
        t0 = time.perf_counter()
        mp.spawn(_spawn_worker, args=(world, init_file), nprocs=world, join=True)
        times.append(time.perf_counter() - t0)
    return times


def time_torchrun(world: int, repeats: int, tmp: Path) -> list[float]:
    script = tmp / "torchrun_job.py"
    script.write_text(TORCHRUN_SCRIPT)
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        str(world),
        str(script),
    ]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(cmd, capture_output=True, timeout=600, check=True, env=env)
        times.append(time.perf_counter() - t0)
    return times


def main(quick: bool = False) -> str:
    warm, repeats = (3, 1) if quick else (10, 3)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_launch_") as d:
        tmp = Path(d)
        for world in WORLDS:
            cd = time_course_dist(world, warm, tmp)
            sp = time_spawn(world, repeats, tmp)
            tr = time_torchrun(world, repeats, tmp)
            cd_warm = statistics.median(cd["warm"])
            rows.append((world, cd["first"], cd_warm, statistics.median(sp), statistics.median(tr)))
            log.info(
                "world %d: course_dist first %.2f s, warm %.3f s; mp.spawn %.2f s; torchrun %.2f s",
                world,
                cd["first"],
                cd_warm,
                rows[-1][3],
                rows[-1][4],
            )
    lines = [
        "# Launch-to-results time of a trivial all_reduce (gloo)",
        "",
        f"Measured {machine()}; `python -m bench launch{' --quick' if quick else ''}` "
        f"({warm} warm course_dist calls, {repeats} spawn/torchrun calls per world size; medians).",
        "",
        "| world | course_dist first call | course_dist warm (median) | mp.spawn (median) "
        "| torchrun (median) "
        "| spawn / course_dist warm | torchrun / course_dist warm | spawn / course_dist first |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for world, first, cd_warm, sp, tr in rows:
        lines.append(
            f"| {world} | {first:.2f} s | {cd_warm:.3f} s | {sp:.2f} s | {tr:.2f} s | "
            f"{sp / cd_warm:.0f}x | {tr / cd_warm:.0f}x | {sp / first:.1f}x |"
        )
    lines += [
        "",
        "Targets (issue 2): >= 5x faster than mp.spawn at world 4 and < 1 s median once warm.",
        "The first call pays for starting the forkserver and importing torch in it, once;",
        "every later call forks its ranks from that server.",
        "Quick runs are smoke tests: do not quote them."
        if quick
        else "The forkserver preloads torch, torch.distributed and torch._dynamo once: that first call can\n"
        "cost about one mp.spawn; every later launch (and every DDP construction in a rank) reuses it.",
        "",
    ]
    text = "\n".join(lines)
    path = write("launch", text)
    log.info("wrote %s", path)
    return text


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    main(quick="--quick" in sys.argv)
