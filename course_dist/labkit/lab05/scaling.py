"""Scaling against quality and cost (exercises 3-4): an alpha-beta fit of gloo's all_reduce, a simulated
8-64-rank cluster calibrated by it, gradient norms at two batch sizes for the noise scale, and the
time/cost-to-target table the decision is made from.

Models (anchors.md): ring all-reduce of n bytes at world R costs ``2(R-1) alpha + 2(R-1)/R n beta``; steps to
a target loss ``S(B) = S_min (1 + B_noise / B)`` (McCandlish et al. 2018), so beyond the critical batch more
data parallelism buys little time and costs samples.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import torch
import torch.distributed as dist
from torch import nn

S_MIN = 400  # steps to the target loss with an infinitely large batch (the lab's model task)
PRICE = 2.0  # $ per rank-hour (a GPU-hour order of magnitude)
SIM_GRAD_BYTES = 4 * 6_000_000  # simulated model: 6 M fp32 parameters
SIM_SAMPLE_S = 0.004  # simulated compute per sample per rank (s)


def _allreduce_rank(sizes: list[int], reps: int) -> list[float]:
    out = []
    for n in sizes:
        t = torch.ones(max(1, n // 4))
        dist.all_reduce(t)  # warm-up: gloo connects lazily per size class
        times = []
        for _ in range(reps):
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(t)
            times.append(time.perf_counter() - t0)
        out.append(float(np.median(times)))
    return out


def measure_allreduce(sizes_bytes: list[int], world: int = 2, reps: int = 5) -> pd.DataFrame:
    """Median gloo all_reduce seconds per message size at ``world`` (one launch)."""
    from course_dist import launch

    res = launch(_allreduce_rank, world, args=(list(sizes_bytes), reps), backend="gloo", stream=False)
    slowest = np.max(np.array(res), axis=0)  # a collective is as slow as its slowest rank
    return pd.DataFrame({"world": world, "bytes": list(sizes_bytes), "seconds": slowest})


def fit_alpha_beta(df: pd.DataFrame) -> dict[str, float]:
    """Least-squares ``seconds = 2(R-1) alpha + 2(R-1)/R bytes beta`` -> {"alpha": s, "beta": s/byte}."""
    world = int(df["world"].iloc[0])
    slope, intercept = np.polyfit(df["bytes"].to_numpy(float), df["seconds"].to_numpy(float), 1)
    return {"alpha": max(float(intercept), 1e-7) / (2 * (world - 1)),
            "beta": max(float(slope), 1e-13) / (2 * (world - 1) / world)}


def calibration(fit: dict[str, float]) -> str:
    """The label every simulated figure carries: what the model was calibrated on (never a GPU fact)."""
    return (f"simulated: alpha-beta fit of gloo all_reduce at world 2 on this machine (loopback, 2 shared "
            f"CPU cores; alpha {fit['alpha'] * 1e6:.0f} us, {1 / fit['beta'] / 1e9:.2f} GB/s), "
            f"{SIM_SAMPLE_S * 1e3:.0f} ms/sample compute, {SIM_GRAD_BYTES // 4 / 1e6:.0f} M fp32 parameters")


def allreduce_s(n_bytes: float, world: int, alpha: float, beta: float) -> float:
    if world == 1:
        return 0.0
    return 2 * (world - 1) * alpha + 2 * (world - 1) / world * n_bytes * beta


def simulate(worlds: list[int], mode: str, batch: int, fit: dict[str, float],
             sample_s: float = SIM_SAMPLE_S, grad_bytes: float = SIM_GRAD_BYTES) -> pd.DataFrame:
    """Simulated step time per world size. ``mode`` "strong": global batch ``batch`` split over ranks;
    "weak": ``batch`` per rank. Columns: mode, world, global_batch, step_s, samples_per_s."""
    if mode not in ("strong", "weak"):
        raise ValueError(f"mode must be 'strong' or 'weak', got {mode!r}")
    rows = []
    for w in worlds:
        per_rank = batch / w if mode == "strong" else batch
        step = per_rank * sample_s + allreduce_s(grad_bytes, w, fit["alpha"], fit["beta"])
        rows.append({"mode": mode, "world": w, "global_batch": per_rank * w, "step_s": step,
                     "samples_per_s": per_rank * w / step})
    return pd.DataFrame(rows)


# ---- gradient noise: |G|^2 at two batch sizes, from data parallelism for free ---------------------------
N_DATA, D_IN = 4096, 12


def _task(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, nn.Module]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(N_DATA, D_IN, generator=g)
    noise = 3.0 * torch.randn(N_DATA, 1, generator=g)  # noisy labels: a critical batch in the hundreds
    y = torch.tanh(x @ torch.randn(D_IN, 1, generator=g)) + noise
    torch.manual_seed(seed)
    return x, y, nn.Sequential(nn.Linear(D_IN, 16), nn.Tanh(), nn.Linear(16, 1))


def _flat_grad(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    model.zero_grad()
    nn.functional.mse_loss(model(x), y).backward()
    return torch.cat([p.grad.reshape(-1) for p in model.parameters()])


def _norms_rank(b: int, draws: int, seed: int) -> dict[str, float]:
    x, y, model = _task(seed)
    r, world = dist.get_rank(), dist.get_world_size()
    g = torch.Generator().manual_seed(seed * 7919 + r)
    small, big = [], []
    for _ in range(draws):
        idx = torch.randint(0, N_DATA, (b,), generator=g)
        local = _flat_grad(model, x[idx], y[idx])  # batch b: this rank's gradient
        small.append(float(local.square().sum()))
        dist.all_reduce(local)
        local /= world  # batch world * b: the averaged gradient DDP would apply
        big.append(float(local.square().sum()))
    mean_small = torch.tensor([float(np.mean(small))])
    dist.all_reduce(mean_small)
    return {"b_small": b, "b_big": b * world, "g2_small": float(mean_small) / world,
            "g2_big": float(np.mean(big))}


def grad_norms(b_small: int = 32, world: int = 2, draws: int = 300, seed: int = 0) -> dict[str, float]:
    """E|g|^2 at batch ``b_small`` (one rank's gradient) and ``world * b_small`` (the all-reduced one)."""
    from course_dist import launch

    return launch(_norms_rank, world, args=(b_small, draws, seed), backend="gloo", stream=False)[0]


def true_noise_scale(seed: int = 0) -> dict[str, float]:
    """tr(Sigma), |G|^2 and B_simple from every per-sample gradient of the whole dataset (the oracle)."""
    x, y, model = _task(seed)
    per = torch.stack([_flat_grad(model, x[i: i + 1], y[i: i + 1]) for i in range(0, N_DATA, 4)])
    mean = per.mean(0)
    tr = float((per - mean).square().sum(1).mean())
    g2 = float(mean.square().sum())
    return {"trace_sigma": tr, "g2": g2, "b_simple": tr / g2}


def candidates(worlds: list[int], batches: list[int], fit: dict[str, float], b_noise: float,
               sample_s: float = SIM_SAMPLE_S, grad_bytes: float = SIM_GRAD_BYTES, price: float = PRICE
               ) -> pd.DataFrame:
    """Every (world, global batch): simulated step time, steps to target ``S_min (1 + B_noise / B)``, time
    and cost to target (``price`` $ per rank-hour)."""
    rows = []
    for w in worlds:
        for b in batches:
            if b < w:
                continue  # at least one sample per rank
            step = b / w * sample_s + allreduce_s(grad_bytes, w, fit["alpha"], fit["beta"])
            steps = S_MIN * (1 + b_noise / b)
            rows.append({"world": w, "global_batch": b, "step_s": step, "steps": steps,
                         "time_s": steps * step, "cost": steps * step / 3600 * w * price})
    return pd.DataFrame(rows)


def step_time_samples(steps: int = 40) -> list[float]:
    """This machine's synchronized step times (world 2, the straggler model without a straggler)."""
    from course_dist.labkit.lab05 import stragglers

    spans = stragglers.run([8, 8], slow_rank=0, factor=1.0, steps=steps)["spans"]
    per = spans.groupby(["step", "rank"])["seconds"].sum().groupby("step").max()
    return [float(s) for s in per.to_numpy()]


