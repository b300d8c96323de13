"""How long a healthy rank can sit in one collective (exercise 4): the step tail is only one of the waits.

A collective timeout fires when *any* collective waits longer than it, so it must sit above every legitimate
wait of a healthy job, not only the step's:

- ``step``: the synchronized step time of the lab's world-2 job (the straggler model of exercise 2, 8 samples
  per rank, whose compute is a 4 ms/sample sleep);
- ``warmup``: the first step, which pays one-off costs (gloo connects lazily; on GPUs also NCCL communicator
  set-up, autotuning, compilation);
- ``checkpoint``: rank 1's wait in a barrier while rank 0 saves a checkpoint of the simulated 6 M-parameter
  model with its two AdamW moments (72 MB, ``torch.save`` + ``fsync``: a real disk write on this machine);
- ``eval``: rank 1's wait in a barrier while rank 0 alone evaluates 16 batches of 8 samples (the same
  4 ms/sample sleep).

Each phase's seconds are the slowest rank's (a collective is as slow as its last arrival).
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from course_dist.labkit.lab05.scaling import SIM_GRAD_BYTES

EVAL_BATCHES = 16


def _state() -> dict[str, torch.Tensor]:
    n = SIM_GRAD_BYTES // 4  # the simulated model's parameters, fp32
    return {"params": torch.randn(n), "exp_avg": torch.randn(n), "exp_avg_sq": torch.rand(n)}


def _save_checkpoint(path: str, state: dict[str, torch.Tensor]) -> None:
    with open(path, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())  # a checkpoint is only a checkpoint once it is on disk


def _rank_fn(steps: int, saves: int, per_sample_s: float) -> dict[str, list[float]]:
    from course_dist.labkit.lab05.stragglers import global_batch, make_model

    r, world = dist.get_rank(), dist.get_world_size()
    model = make_model()
    model.register_forward_pre_hook(lambda m, inp: time.sleep(per_sample_s * inp[0].shape[0]))
    x, y = global_batch(8 * world)
    xr, yr = x[8 * r: 8 * r + 8], y[8 * r: 8 * r + 8]
    out: dict[str, list[float]] = {"step": [], "warmup": [], "checkpoint": [], "eval": []}
    dist.barrier()  # start together: the first step's time is its own one-off costs, not the launch
    for i in range(steps + 1):
        t0 = time.perf_counter()
        model.zero_grad()
        nn.functional.mse_loss(model(xr), yr).backward()
        flat = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
        dist.all_reduce(flat)
        out["warmup" if i == 0 else "step"].append(time.perf_counter() - t0)
    state = _state() if r == 0 else {}  # built before the clock: the save alone is timed
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(saves):
            t0 = time.perf_counter()
            if r == 0:
                _save_checkpoint(os.path.join(tmp, f"ckpt-{k}.pt"), state)
            dist.barrier()  # the others wait here for the save: the collective the timeout must survive
            out["checkpoint"].append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    if r == 0:
        with torch.no_grad():
            for _ in range(EVAL_BATCHES):
                model(xr)
    dist.barrier()
    out["eval"].append(time.perf_counter() - t0)
    return out


def phase_seconds(steps: int = 20, saves: int = 2, per_sample_s: float = 0.004) -> dict[str, list[float]]:
    """Measured seconds of each phase a healthy world-2 job spends inside or waiting on collectives:
    ``{"step": [...], "warmup": [...], "checkpoint": [...], "eval": [...]}``, per entry the slowest rank's."""
    from course_dist import launch

    if steps < 1 or saves < 1:
        raise ValueError(f"steps and saves must be >= 1, got steps={steps!r}, saves={saves!r}")
    res: list[dict[str, Any]] = launch(_rank_fn, 2, args=(steps, saves, per_sample_s), backend="gloo",
                                       timeout=120, stream=False)
    return {k: [max(float(o[k][i]) for o in res) for i in range(len(res[0][k]))] for k in res[0]}


_SECONDS = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?(?:e-?\d+)?)\s*s\b")


def seconds_in(text: str) -> list[float]:
    """Every number followed by ``s`` (seconds) in ``text``: ``"after 0.123 s without"`` -> ``[0.123]``
    (``3x`` and ``72 MB`` are not seconds)."""
    if not isinstance(text, str):
        raise TypeError(f"seconds_in expects a str, got {type(text).__name__}")
    return [float(m) for m in _SECONDS.findall(text)]
