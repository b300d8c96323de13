"""``python -m bench gpu``: the GPU check, ready to run on a CUDA node; on a machine without one it says
so and exits 0 (and writes nothing: a results page holds measurements only).

On a CUDA node, in one run:
1. the NCCL smoke tests (``pytest tests/test_course_dist_nccl.py``: collectives on cuda tensors, a rank's
   failure torn down), their outcome line;
2. each lab's reference notebook in fast mode (``COURSE_FAST=1``) in a plain kernel: ``course_dist.launch``'s
   default ``backend="auto"`` picks NCCL with one GPU per rank whenever the node has ``world_size`` GPUs (a
   cell that asks for more ranks than GPUs falls back to gloo with a warning; lab05's measurement harnesses
   pin gloo on purpose), so this runs every lab on NCCL where it can; wall seconds and the cells that raised;
3. the headline figures timed with CUDA events (``torch.cuda.Event(enable_timing=True)`` around the work,
   read after a synchronize): NCCL all_reduce bus bandwidth at world 2 .. min(GPUs, 4), the lab02 reference
   bucketed DDP vs torch DDP step time, and the lab01 reference TP block vs torch's ``parallelize_module``,
   at world 2, reference and torch interleaved over rounds, ratios per round as min / median / max.
Writes ``bench/results/gpu.md``. A section that fails is a row with its error, not a crash; the exit code is
1 when any did. Needs 2+ GPUs for the distributed figures (NCCL cannot put two ranks on one GPU).
"""

from __future__ import annotations

import logging
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench import machine, spread, verdict, write

log = logging.getLogger("bench.gpu")
ROOT = Path(__file__).resolve().parents[1]
NO_GPU = (
    "bench gpu: no CUDA device visible (torch.cuda.is_available() is False): nothing measured, "
    "bench/results/gpu.md not written. Run `python -m bench gpu` on a CUDA node."
)
LABS = ("lab01", "lab02", "lab03", "lab04", "lab05", "homework")


def gpu_count() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def nccl_smoke() -> tuple[bool, str]:
    """Run the NCCL smoke tests; (passed, pytest's summary line)."""
    p = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
                        "tests/test_course_dist_nccl.py"], cwd=ROOT, capture_output=True, text=True,
                       timeout=900)
    tail = [ln for ln in p.stdout.strip().splitlines() if ln.strip()][-1:] or ["(no output)"]
    return p.returncode == 0, tail[0]


def labs_fast(labs: tuple[str, ...]) -> list[dict[str, Any]]:
    """Each lab's reference notebook in fast mode, one row each (the course-size bench's runner)."""
    from bench.bench_course_size import run_reference

    rows = []
    for lab in labs:
        try:
            rows.append({"lab": lab, **run_reference(lab, fast=True)})
        except Exception as exc:  # one broken lab is a row, the others still run
            why = f"{type(exc).__name__}: {str(exc)[:200]}"
            rows.append({"lab": lab, "seconds": float("nan"), "cells that raised": why})
    return rows


def _events() -> tuple[Any, Any]:
    import torch

    return torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)


def allreduce_rank(sizes: list[int], iters: int) -> list[tuple[int, float]]:
    """NCCL all_reduce: median seconds per size by CUDA events, slowest rank."""
    import torch
    import torch.distributed as dist

    import course_dist

    out = []
    for nbytes in sizes:
        t = torch.ones(nbytes // 4, device=course_dist.device())
        times = []
        for i in range(iters + 3):
            a, b = _events()
            a.record()
            dist.all_reduce(t)
            b.record()
            torch.cuda.synchronize()
            if i >= 3:
                times.append(a.elapsed_time(b) / 1e3)
        s = torch.tensor([statistics.median(times)], device=t.device)
        dist.all_reduce(s, op=dist.ReduceOp.MAX)
        out.append((nbytes, float(s)))
    return out


def ddp_rank(impl: str, ddp_cls: Any, steps: int, batch: int) -> float:
    """lab02's training step (zero_grad, forward, backward, sync, SGD step) by CUDA events; median step,
    slowest rank. ``impl`` "torch" (torch DDP) or "bucketed" (``ddp_cls``, the lab's reference)."""
    import torch
    import torch.distributed as dist
    from torch import nn

    from course_dist.labkit.lab02.model import make_model, model_config
    from course_dist.labkit.lab02.train import sgd, shard

    cfg = model_config("lab")
    model = make_model(cfg, 0)
    if impl == "torch":
        fwd, sync = nn.parallel.DistributedDataParallel(model), (lambda: None)
    else:
        fwd = ddp_cls(model)
        sync = fwd.finish_gradient_synchronization
    opt, times = sgd(model), []
    for step in range(steps + 3):
        x, y = shard(step, batch, cfg, 0)
        a, b = _events()
        a.record()
        opt.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(fwd(x, use_aux=True), y).backward()
        sync()
        opt.step()
        b.record()
        torch.cuda.synchronize()
        if step >= 3:
            times.append(a.elapsed_time(b) / 1e3)
    s = torch.tensor([statistics.median(times)], device=x.device)
    dist.all_reduce(s, op=dist.ReduceOp.MAX)
    return float(s)


def tp_rank(col_cls: Any, row_cls: Any, d_model: int, d_hidden: int, batch: int, steps: int) -> float:
    """One MLP block's forward + backward by CUDA events: the reference classes, or torch TP when ``col_cls``
    is None; median step, slowest rank."""
    import torch
    import torch.distributed as dist
    from torch import nn

    import course_dist
    from course_dist.labkit.lab01.model import Block

    dev = course_dist.device()
    torch.manual_seed(0)
    block = Block(d_model, d_hidden).to(dev)
    x = torch.randn(batch, d_model, device=dev)
    if col_cls is None:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

        mesh = init_device_mesh("cuda", (dist.get_world_size(),))
        fwd: nn.Module = parallelize_module(block, mesh, {"up": ColwiseParallel(), "down": RowwiseParallel()})
    else:
        fwd = nn.Sequential(col_cls(block.up), nn.ReLU(), row_cls(block.down))
    times = []
    for i in range(steps + 3):
        a, b = _events()
        a.record()
        fwd(x.clone().requires_grad_(True)).sum().backward()
        b.record()
        torch.cuda.synchronize()
        if i >= 3:
            times.append(a.elapsed_time(b) / 1e3)
    s = torch.tensor([statistics.median(times)], device=dev)
    dist.all_reduce(s, op=dist.ReduceOp.MAX)
    return float(s)


def _pair(fn: Any, ours: tuple, theirs: tuple, rounds: int) -> tuple[list[float], list[float]]:
    from course_dist import launch

    mine, torch_ = [], []
    for _ in range(rounds):  # interleaved: reference, torch, reference, ...
        mine.append(launch(fn, 2, args=ours, backend="nccl", timeout=600, stream=False)[0])
        torch_.append(launch(fn, 2, args=theirs, backend="nccl", timeout=600, stream=False)[0])
    return mine, torch_


def _ddp_args() -> tuple[tuple, tuple]:
    from bench.bench_ddp import reference

    return ("bucketed", reference()["BucketedDDP"], 20, 64), ("torch", None, 20, 64)


def _tp_args() -> tuple[tuple, tuple]:
    from bench.bench_lab01 import reference

    ns = reference()
    size = (1024, 4096, 256, 20)  # d_model, d_hidden, batch, steps: enough work per step for a GPU
    return (ns["ColumnParallelLinear"], ns["RowParallelLinear"], *size), (None, None, *size)


def headlines(gpus: int, rounds: int) -> list[str]:
    """Markdown rows of the CUDA-event figures (each failure a row naming its error)."""
    from course_dist import launch

    rows = []
    try:
        sizes = [2**20, 16 * 2**20, 64 * 2**20, 256 * 2**20]
        for w in range(2, min(gpus, 4) + 1):
            res = launch(allreduce_rank, w, args=(sizes, 20), backend="nccl", timeout=600, stream=False)[0]
            for nbytes, sec in res:
                bus = nbytes / sec / 1e9 * 2 * (w - 1) / w
                rows.append(f"| NCCL all_reduce {nbytes >> 20} MB, world {w} | {sec * 1e3:.3f} ms | busbw "
                            f"{bus:.1f} GB/s | — | — |")
    except Exception as exc:
        rows.append(f"| NCCL all_reduce | failed: {type(exc).__name__}: {exc} | — | — | — |")
    cases = [
        ("lab02 bucketed DDP vs torch DDP, lab model, batch 64/rank, world 2", ddp_rank, 1.15, _ddp_args),
        ("lab01 TP block 1024->4096->1024, batch 256, world 2", tp_rank, 1.2, _tp_args),
    ]
    for what, fn, target, args in cases:
        try:
            ours, theirs = args()
            mine, torch_ = _pair(fn, ours, theirs, rounds)
            ratios = [a / b for a, b in zip(mine, torch_, strict=True)]
            rows.append(f"| {what} | {spread([v * 1e3 for v in mine])} ms | "
                        f"{spread([v * 1e3 for v in torch_])} ms | {spread(ratios, '{:.2f}')} | <= {target}: "
                        f"{verdict(statistics.median(ratios), target)} |")
        except Exception as exc:
            rows.append(f"| {what} | failed: {type(exc).__name__}: {str(exc)[:200]} | — | — | — |")
    return rows


def main(quick: bool = False) -> int:
    gpus = gpu_count()
    if gpus == 0:
        print(NO_GPU)
        return 0
    import torch

    t0, load0 = time.perf_counter(), os.getloadavg()[0]
    ok, smoke = nccl_smoke()
    lab_rows = labs_fast(LABS[:2] if quick else LABS)
    head = headlines(gpus, 2 if quick else 5) if gpus >= 2 else [
        f"| distributed figures | not measured: {gpus} GPU (NCCL needs one GPU per rank, world >= 2) "
        "| — | — | — |"]
    failed = not ok or any(r["cells that raised"] != "none" for r in lab_rows)
    failed = failed or any("failed" in r for r in head)
    lines = [
        "# GPU check (NCCL, CUDA events)",
        "",
        f"Measured {machine()}; {gpus} x {torch.cuda.get_device_name(0)}; load average {load0:.1f}; "
        f"`python -m bench gpu{' --quick' if quick else ''}`, {time.perf_counter() - t0:.0f} s in all."
        + (" **Quick run: a smoke test, not a figure to quote.**" if quick else ""),
        "",
        f"NCCL smoke tests (tests/test_course_dist_nccl.py): **{'passed' if ok else 'FAILED'}**: `{smoke}`",
        "",
        "Each lab's reference notebook in fast mode (launch's backend='auto': NCCL where world <= GPUs):",
        "",
        "| lab | seconds | slowest cell | cells that raised |",
        "|---|---|---|---|",
        *(f"| {r['lab']} | {r['seconds']} | {r.get('slowest cell', '—')} | {r['cells that raised']} |"
          for r in lab_rows),
        "",
        "Headline figures by CUDA events (min / median / max over interleaved rounds; ratios per round):",
        "",
        "| what | reference | torch | ratio (reference / torch) | target |",
        "|---|---|---|---|---|",
        *head,
        "",
    ]
    log.info("wrote %s", write("gpu", "\n".join(lines)))
    return 1 if failed else 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    sys.exit(main(quick="--quick" in sys.argv))
