"""Lab 02 measurements: what ``set_epoch`` and padding do (exercise 1), ring vs gloo bus bandwidth with the
alpha-beta fit (exercise 3), step times of naive / bucketed / torch DDP and the bucket sweep (exercise 5).

Every harness takes the student's function, launches the ranks itself and returns a pandas DataFrame::

    df = lab02.measure_busbw(ring_all_reduce, world=2, sizes_bytes=[1 << 20, 16 << 20])
    lab02.plot_busbw(df, world=2)
"""

from __future__ import annotations

import logging
import math
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from course_dist.labkit.lab02.model import LabNet, make_data, make_model, model_config
from course_dist.labkit.lab02.train import sgd as _sgd
from course_dist.labkit.lab02.train import shard as _shard
from course_dist.labkit.lab02.train import sync_device as _sync_device

log = logging.getLogger("course_dist.labkit.lab02")


def time_steps(impl: str, *, steps: int, batch: int, average_gradients: Callable | None = None,
               ddp_cls: Callable | None = None, bucket_cap_mb: float = 25.0,
               warmup: int = 2) -> dict[str, float]:
    """Rank function: median seconds per training step of ``impl`` ("naive", "bucketed", "torch") on the lab
    model."""
    cfg = model_config("lab")
    model = make_model(cfg, 0)
    if impl == "naive":
        fwd, sync = model, (lambda: average_gradients(model))
    elif impl == "bucketed":
        fwd = ddp_cls(model, bucket_cap_mb=bucket_cap_mb)
        sync = fwd.finish_gradient_synchronization
    elif impl == "torch":
        fwd, sync = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=bucket_cap_mb), (lambda: None)
    else:
        raise ValueError(f"impl must be naive, bucketed or torch, got {impl!r}")
    opt = _sgd(model)
    times = []
    for step in range(warmup + steps):
        x, y = _shard(step, batch, cfg, 0)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(fwd(x, use_aux=True), y).backward()
        sync()
        opt.step()
        _sync_device()  # CUDA work is asynchronous: time when it finished, not when it was queued
        if step >= warmup:
            times.append(time.perf_counter() - t0)
    return {"step_s": sorted(times)[len(times) // 2]}


def measure_ddp(impls: dict[str, dict[str, Any]], worlds: list[int], *, steps: int, batch: int,
                rounds: int = 1, timeout: float = 60.0) -> Any:
    """Step time of every (impl, world): one row each with impl, world, batch_per_rank, step_s and error (why
    a row has no number: a stub that raises, a hang). ``impls`` maps a name to ``time_steps`` kwargs.

    step_s is the slowest rank's median step, then the median over ``rounds``. The rounds are interleaved
    (A B C A B C ...) so that a neighbour's burst of CPU use slows every configuration alike instead of
    deciding the comparison. A configuration that fails once is not retried."""
    import pandas as pd
    from tqdm.auto import tqdm

    from course_dist import launch

    runs = [(name, kw, w) for name, kw in impls.items() for w in worlds]
    times: dict[tuple[str, int], list[float]] = {(n, w): [] for n, _, w in runs}
    errors: dict[tuple[str, int], str] = {}
    for name, kw, world in tqdm(runs * rounds, desc="measure", leave=False):
        if (name, world) in errors:
            continue
        try:
            res = launch(time_steps, world_size=world, kwargs={"steps": steps, "batch": batch, **kw},
                         timeout=timeout, stream=False)
            times[(name, world)].append(max(r["step_s"] for r in res))
        except Exception as exc:  # a broken implementation is a row with a reason, not a dead notebook
            errors[(name, world)] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
            log.warning("%s at world %d failed: %s", name, world, errors[(name, world)])
    rows = [{"impl": n, "world": w, "batch_per_rank": batch,
             "step_s": statistics.median(times[(n, w)]) if times[(n, w)] else math.nan,
             "error": errors.get((n, w), "")} for n, _, w in runs]
    return pd.DataFrame(rows)


def plot_step_times(table: Any, bucket_sweep: Any = None) -> Any:
    """Step time per implementation and world (left) and, if given, step time against bucket cap (right)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2 if bucket_sweep is not None else 1, figsize=(10, 3.5), squeeze=False)
    ax = axes[0][0]
    for name, g in table.groupby("impl"):
        ax.plot(g["world"], g["step_s"] * 1e3, "o-", label=name)
    ax.set(xlabel="world size", ylabel="ms / step", title="step time (lower is better)")
    ax.legend()
    if bucket_sweep is not None:
        ax = axes[0][1]
        ax.semilogx(bucket_sweep["bucket_cap_mb"], bucket_sweep["step_s"] * 1e3, "o-")
        ax.set(xlabel="bucket cap (MB)", ylabel="ms / step", title="bucketed DDP, world 2")
    fig.tight_layout()
    return fig


def busbw_rank(ring_all_reduce: Callable, sizes_bytes: list[int], reps: int) -> list[dict[str, float]]:
    """Rank function: median time of ``ring_all_reduce`` and of ``dist.all_reduce`` (gloo's own) per message
    size."""
    from course_dist import device

    out = []
    for nbytes in sizes_bytes:
        t = torch.ones(max(nbytes // 4, 1), device=device())
        for name, fn in (("ring", ring_all_reduce), ("gloo", dist.all_reduce)):
            times = []
            for _ in range(reps + 1):
                dist.barrier()  # start together: we time the collective, not the other rank's arrival
                t0 = time.perf_counter()
                fn(t)
                _sync_device()
                times.append(time.perf_counter() - t0)
            out.append({"impl": name, "bytes": t.numel() * 4, "time_s": sorted(times[1:])[reps // 2]})
    return out


def measure_busbw(ring_all_reduce: Callable, world: int, sizes_bytes: list[int], reps: int = 5) -> Any:
    """Bus bandwidth (nccl-tests' definition: bytes/time * 2(R-1)/R) of the ring vs gloo, as a DataFrame."""
    import pandas as pd

    from course_dist import launch

    res = launch(busbw_rank, world_size=world, args=(ring_all_reduce, sizes_bytes, reps), timeout=300,
                 stream=False)
    df = pd.DataFrame(res[0])
    df["time_s"] = [max(r[i]["time_s"] for r in res) for i in range(len(res[0]))]
    df["busbw_GBps"] = df["bytes"] / df["time_s"] * 2 * (world - 1) / world / 1e9
    return df


def fit_alpha_beta(df: Any, impl: str, world: int) -> tuple[float, float]:
    """Least-squares fit of the ring model time = 2(R-1) * (alpha + (bytes/R) * beta) to one implementation's
    rows. Returns (alpha seconds per message step, beta seconds per byte)."""
    g = df[df["impl"] == impl]
    steps = 2 * (world - 1)
    a = torch.tensor([[steps, steps * b / world] for b in g["bytes"]], dtype=torch.float64)
    y = torch.tensor(list(g["time_s"]), dtype=torch.float64)
    sol = torch.linalg.lstsq(a, y.unsqueeze(1)).solution.squeeze(1)
    return float(sol[0]), float(sol[1])


def plot_busbw(df: Any, world: int) -> Any:
    """Measured bus bandwidth of ring and gloo against message size, with the alpha-beta model fitted to the
    ring."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for name, g in df.groupby("impl"):
        ax.loglog(g["bytes"], g["busbw_GBps"], "o-", label=f"{name} (measured)")
    alpha, beta = fit_alpha_beta(df, "ring", world)
    inv_beta = 1 / beta / 1e9 if beta > 0 else math.inf
    b = df[df["impl"] == "ring"]["bytes"]
    model_t = 2 * (world - 1) * (alpha + b / world * beta)
    ax.loglog(b, b / model_t * 2 * (world - 1) / world / 1e9, "k--",
              label=f"alpha-beta: alpha={alpha * 1e6:.0f} us, 1/beta={inv_beta:.2f} GB/s")
    ax.set(xlabel="message bytes", ylabel="bus bandwidth (GB/s)", title=f"all-reduce, world {world}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def epoch_coverage(rank_indices: Callable, n: int, world: int, epochs: int, seed: int = 0) -> Any:
    """What ``set_epoch`` buys: the fraction of the dataset each rank has seen after each epoch, with the
    epoch passed to the sampler (``set_epoch(e)``) and without it (every epoch replays epoch 0's order)."""
    import pandas as pd

    rows = []
    for with_epoch in (True, False):
        seen = [set() for _ in range(world)]
        for e in range(epochs):
            for r in range(world):
                epoch = e if with_epoch else 0
                seen[r].update(rank_indices(n, world, r, shuffle=True, seed=seed, epoch=epoch))
            rows.append({"set_epoch": with_epoch, "epoch": e,
                         "mean fraction of data seen per rank": sum(len(s) for s in seen) / world / n})
    return pd.DataFrame(rows)


def padded_eval(rank_indices: Callable, correct: torch.Tensor, worlds: list[int]) -> Any:
    """What padding does to an evaluation metric: accuracy computed over the union of every rank's indices (as
    a distributed eval with DistributedSampler(shuffle=False) does) vs the true accuracy of the whole set."""
    import pandas as pd

    n, rows = len(correct), []
    for world in worlds:
        idx = [i for r in range(world) for i in rank_indices(n, world, r, shuffle=False)]
        rows.append({"world": world, "samples evaluated": len(idx), "duplicates": len(idx) - len(set(idx)),
                     "true accuracy": float(correct.float().mean()),
                     "distributed accuracy": float(correct[idx].float().mean())})
    return pd.DataFrame(rows)


def eval_correctness(n: int = 30, seed: int = 0) -> torch.Tensor:
    """Per-sample correctness (bool) of a briefly trained LabNet on ``n`` held-out samples."""
    cfg = model_config("tiny")
    torch.manual_seed(seed)
    model = LabNet(cfg)
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=0.01)
    x, y = make_data(512, cfg, seed)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matmuls: extra threads only spin (and fight the ranks for the cores)
    try:
        for _ in range(60):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
        xe, ye = make_data(n, cfg, seed + 1)
        with torch.no_grad():
            return model(xe).argmax(1) == ye
    finally:
        torch.set_num_threads(threads)
