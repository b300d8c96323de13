"""Checkpoint cost on this machine: the homework trainer's atomic save beside what a user would pick instead.

    python -m bench checkpoint [--quick]

Same state for every contender (an MLP's weights + AdamW moments after one step) at 13 MB and 302 MB (and
101 MB in a full run), one thread, one directory on one file system; the rounds are interleaved (the order
rotates each round) so a noisy neighbour hits every contender alike. Every figure is min/median/max over the
rounds; a ratio is taken within each round (same moment, same load) and then summarised. Contenders:

- durable ``torch.save``: into an open file, ``flush``, ``fsync``, then ``fsync`` of the directory (the fair
  baseline for anything crash-safe); also ``torch.save(state, path)`` (torch's C++ writer) + the same fsyncs.
  The target is judged against the faster of the two in each round;
- the same with torch's per-record crc32 switched off (no checksum at all: shown, not a target);
- the same into a new file per save, the last two kept (a crash mid-write then still leaves a checkpoint):
  the like-for-like plain save, since the atomic save also writes new files and deletes the oldest;
- ``fttrainer.save_checkpoint`` at world 1, keep_last=2 (each save also deletes the checkpoint that falls
  out): sha256 while writing (crc32 off for that write: the sha256 covers every byte), write-behind
  ``fdatasync``, one batch of fsyncs, staging folder, rename, ``latest``;
- ``torch.distributed.checkpoint.save`` (DCP, one process, its default ``sync_files=True``);
- loads from the page cache: ``torch.load``; the trainer's resume (``latest_checkpoint`` re-hashes every file,
  then ``load_checkpoint``) and ``load_checkpoint`` alone; DCP ``load`` into a preallocated state;
- peak memory of each save: the rise of the peak RSS (``VmHWM``, reset through ``/proc/self/clear_refs``)
  above the RSS before the save - torch's tensor memory is invisible to tracemalloc;
- an asynchronous save: the state copied into staging buffers reused across saves (the only stall the loop
  sees), the atomic save in a background thread; and the slowdown of a training loop (a 4 x 512 MLP, batch
  256) while that background write runs, against the same loop alone.

Writes bench/results/checkpoint.md.
"""

from __future__ import annotations

import logging
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import machine, write

log = logging.getLogger("bench.checkpoint")
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "solutions" / "homework") not in sys.path:
    sys.path.append(str(ROOT / "solutions" / "homework"))  # appended: homework.py must not shadow a package


def make_state(width: int, depth: int) -> dict[str, Any]:
    import torch

    torch.manual_seed(0)
    layers: list[torch.nn.Module] = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers)
    opt = torch.optim.AdamW(model.parameters())
    model(torch.randn(4, width)).sum().backward()
    opt.step()
    return {"model": model.state_dict(), "optimizer": opt.state_dict()}


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _peak_rss_rise(fn: Callable[[], Any]) -> int:
    """Bytes by which the peak RSS during ``fn()`` exceeds the RSS before it (Linux: VmHWM reset to VmRSS)."""

    def status(key: str) -> int:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
        raise ValueError(f"{key} not in /proc/self/status")

    Path("/proc/self/clear_refs").write_text("5")
    before = status("VmRSS")
    fn()
    return status("VmHWM") - before


def rounds(fns: dict[str, Callable[[], Any]], n: int, cleanup: Callable[[], None]) -> dict[str, list[float]]:
    """Seconds of each of ``fns`` in each of ``n`` rounds (the order rotates each round)."""
    out: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    for i in range(n):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            t0 = time.perf_counter()
            fns[name]()
            out[name].append(time.perf_counter() - t0)
            cleanup()  # untimed: what a contender left that the next one must not find
    return out


def mmm(xs: list[float], scale: float = 1.0, fmt: str = ".0f") -> str:
    return "/".join(f"{x * scale:{fmt}}" for x in (min(xs), statistics.median(xs), max(xs)))


def save_contenders(root: Path, state: dict[str, Any]) -> dict[str, Callable[[], Any]]:
    import fttrainer
    import torch
    import torch.distributed.checkpoint as dcp

    counter = iter(range(1, 10**6))
    local = {"torch": torch.get_rng_state()}

    def durable_file() -> None:
        with open(root / "plain.pt", "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        _fsync_dir(root)

    def durable_path() -> None:
        torch.save(state, root / "plain_path.pt")
        with open(root / "plain_path.pt", "rb") as f:
            os.fsync(f.fileno())
        _fsync_dir(root)

    fresh: list[Path] = []

    def durable_new_file() -> None:
        """A new file per save, the last two kept: what a crash-safe plain save must do (an overwrite in
        place destroys the only checkpoint if the job dies mid-write)."""
        path = root / f"plain-{next(counter)}.pt"
        with open(path, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        _fsync_dir(root)
        fresh.append(path)
        if len(fresh) > 2:
            fresh.pop(0).unlink()

    def durable_nocrc() -> None:
        old = torch.serialization.get_crc32_options()
        torch.serialization.set_crc32_options(False)
        try:
            durable_file()
        finally:
            torch.serialization.set_crc32_options(old)

    return {
        "torch.save + fsync (file object)": durable_file,
        "torch.save(path) + fsync": durable_path,
        "torch.save + fsync, crc32 off": durable_nocrc,
        "torch.save + fsync, new file, last 2 kept": durable_new_file,
        "atomic save_checkpoint, keep=2": lambda: fttrainer.save_checkpoint(
            root / "atomic", next(counter), state, local, 0, 1, keep_last=2
        ),
        "DCP save": lambda: dcp.save(state, checkpoint_id=str(root / f"dcp-{next(counter)}")),
    }


def measure_size(root: Path, width: int, depth: int, n: int) -> dict[str, Any]:
    import fttrainer
    import torch
    import torch.distributed.checkpoint as dcp

    state = make_state(width, depth)
    nbytes = sum(t.numel() * t.element_size() for t in state["model"].values()) * 3  # weights + 2 moments
    fns = save_contenders(root, state)

    def cleanup() -> None:
        for d in sorted(root.glob("dcp-*"))[:-1]:  # keep the newest for the load round
            shutil.rmtree(d)

    saves = rounds(fns, n, cleanup)
    peak = {name: _peak_rss_rise(fn) for name, fn in fns.items()}
    cleanup()
    newest = fttrainer.latest_checkpoint(root / "atomic")
    dcp_dir = sorted(root.glob("dcp-*"))[-1]
    template = {"model": {k: torch.empty_like(v) for k, v in state["model"].items()}}
    loads = rounds(
        {
            "torch.load": lambda: torch.load(root / "plain.pt", weights_only=True),
            "resume: latest_checkpoint (sha256) + load_checkpoint": lambda: fttrainer.load_checkpoint(
                fttrainer.latest_checkpoint(root / "atomic"), 0
            ),
            "load_checkpoint alone": lambda: fttrainer.load_checkpoint(newest, 0),
            "DCP load (model only, in place)": lambda: dcp.load(template, checkpoint_id=str(dcp_dir)),
        },
        n,
        lambda: None,
    )
    for d in [root / "atomic", *root.glob("dcp-*")]:
        shutil.rmtree(d, ignore_errors=True)
    return {"bytes": nbytes, "saves": saves, "loads": loads, "peak": peak, "state": state}


def async_save(root: Path, state: dict[str, Any], n: int) -> dict[str, list[float]]:
    """Stall (copy into reused staging buffers), background write, and a training loop's step time alone and
    while the background write runs."""
    import fttrainer
    import torch
    from torch.utils._pytree import tree_flatten, tree_map

    # buffers allocated once and reused by every save: the steady-state stall is a copy, no page faults
    staging = tree_map(lambda v: v.clone() if torch.is_tensor(v) else v, state)
    pairs = [
        (a, b)
        for a, b in zip(tree_flatten(staging)[0], tree_flatten(state)[0], strict=True)
        if torch.is_tensor(a)
    ]
    torch.manual_seed(1)
    net = torch.nn.Sequential(*[m for _ in range(4) for m in (torch.nn.Linear(512, 512), torch.nn.ReLU())])
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    x = torch.randn(256, 512)

    def train_step() -> float:
        t0 = time.perf_counter()
        opt.zero_grad()
        net(x).square().mean().backward()
        opt.step()
        return time.perf_counter() - t0

    out: dict[str, list[float]] = {"stall": [], "write": [], "alone": [], "during": []}
    for i in range(n):
        out["alone"].append(statistics.median(train_step() for _ in range(8)))
        t0 = time.perf_counter()
        for dst, src in pairs:
            dst.copy_(src)
        out["stall"].append(time.perf_counter() - t0)
        done: list[float] = []
        t1 = time.perf_counter()

        def background(step: int = i + 1, t1: float = t1, done: list[float] = done) -> None:
            fttrainer.save_checkpoint(root / "async", step, staging, {"step": step}, 0, 1, keep_last=2)
            done.append(time.perf_counter() - t1)

        th = threading.Thread(target=background)
        th.start()
        during = []
        while th.is_alive():
            during.append(train_step())
        th.join()
        out["write"].append(done[0])
        out["during"].append(statistics.median(during))
    shutil.rmtree(root / "async", ignore_errors=True)
    return out


def main(quick: bool = False) -> str:
    import torch

    torch.set_num_threads(1)
    sizes, n = ([(512, 4), (2048, 6)], 5) if quick else ([(512, 4), (1024, 8), (2048, 6)], 7)
    load0 = os.getloadavg()[0]
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-ckpt-", dir=ROOT / "build") as tmp:
        for width, depth in sizes:
            log.info("state %d x %d^2", depth, width)
            results.append(measure_size(Path(tmp), width, depth, n))
        asy = async_save(Path(tmp), results[-1]["state"], n)
    load1 = os.getloadavg()[0]
    atomic, base_f, base_p = (
        "atomic save_checkpoint, keep=2",
        "torch.save + fsync (file object)",
        "torch.save(path) + fsync",
    )
    lines = [
        "# Checkpoint save and load: the homework's atomic save vs a durable torch.save vs DCP",
        "",
        f"Measured {machine()}; load average {load0:.1f} at the start, {load1:.1f} at the end; "
        f"`python -m bench checkpoint{' --quick' if quick else ''}`; states: MLP "
        f"{', '.join(f'{d} x {w}^2' for w, d in sizes)} + AdamW moments; {n} interleaved rounds, one "
        "thread, one ext4 directory (`build/`); every cell is min/median/max over the rounds. CPU and disk "
        "of this machine only: a GPU node adds the device-to-host copy and has other disks.",
        "",
        "| state | save | time ms | MB/s (median) | peak RSS rise MB | durable torch.save / this |",
        "|---|---|---|---|---|---|",
    ]
    verdicts = []
    for r in results:
        mb = r["bytes"] / 1e6
        best = [min(a, b) for a, b in zip(r["saves"][base_f], r["saves"][base_p], strict=True)]
        for name, ts in r["saves"].items():
            ratio = [b / t for b, t in zip(best, ts, strict=True)]
            lines.append(
                f"| {mb:.0f} MB | {name} | {mmm(ts, 1e3)} | {mb / statistics.median(ts):.0f} | "
                f"{r['peak'][name] / 1e6:.0f} | {mmm(ratio, 1, '.2f')} |"
            )
        ratio = [b / t for b, t in zip(best, r["saves"][atomic], strict=True)]
        dcp_r = [t / d for t, d in zip(r["saves"][atomic], r["saves"]["DCP save"], strict=True)]
        like = [
            b / t
            for b, t in zip(
                r["saves"]["torch.save + fsync, new file, last 2 kept"], r["saves"][atomic], strict=True
            )
        ]
        med = statistics.median(ratio)
        verdicts.append(
            f"- {mb:.0f} MB: atomic save at **{med:.2f}x** the faster durable torch.save of each round "
            f"(min/median/max {mmm(ratio, 1, '.2f')}; target >= 0.9: **{'met' if med >= 0.9 else 'MISS'}**); "
            f"against a durable torch.save that also writes a new file and keeps the last two: "
            f"{mmm(like, 1, '.2f')}; DCP save time / atomic {mmm(dcp_r, 1, '.2f')}."
        )
    lines += ["", *verdicts, "", "| state | load | time ms | MB/s (median) |", "|---|---|---|---|"]
    for r in results:
        mb = r["bytes"] / 1e6
        lines += [
            f"| {mb:.0f} MB | {name} | {mmm(ts, 1e3)} | {mb / statistics.median(ts):.0f} |"
            for name, ts in r["loads"].items()
        ]
    stall = [s / w for s, w in zip(asy["stall"], asy["write"], strict=True)]
    slow = [d / a for d, a in zip(asy["during"], asy["alone"], strict=True)]
    big = results[-1]["bytes"] / 1e6
    lines += [
        "",
        "Loads read what the saves just wrote (page cache, not disk). DCP loads the model part only, into "
        "preallocated tensors; the resume re-reads and hashes every file before loading it.",
        "",
        "Where the gap to the in-place save comes from, on this ext4: writing a new file (and deleting the "
        "oldest) costs the plain save as much as it costs the atomic one - compare the `new file, last 2 "
        "kept` row with the in-place rows; the protocol itself (sha256 instead of torch's crc32, the staging "
        "folder, one batch of small fsyncs, two renames) is the rest.",
        "",
        f"- async save of {big:.0f} MB: stall (copy into reused staging buffers) {mmm(asy['stall'], 1e3)} "
        "ms, "
        f"background write {mmm(asy['write'], 1e3)} ms; stall / write **{statistics.median(stall):.3f}** "
        f"({mmm(stall, 1, '.3f')}; target <= 0.10: "
        f"**{'met' if statistics.median(stall) <= 0.10 else 'MISS'}**).",
        f"- training while the background write runs (4 x 512 MLP, batch 256, one thread): step "
        f"{mmm(asy['alone'], 1e3, '.1f')} ms alone, {mmm(asy['during'], 1e3, '.1f')} ms during the write: "
        f"slowdown **{statistics.median(slow):.2f}x** ({mmm(slow, 1, '.2f')}); the write's hashing and "
        "serialising take a core from training on this 2-core box.",
        "",
    ]
    text = "\n".join(lines)
    log.info("wrote %s", write("checkpoint", text))
    return text


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    sys.stdout.write(main(quick="--quick" in sys.argv))
