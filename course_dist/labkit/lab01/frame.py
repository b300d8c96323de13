"""The one-worker baseline of the lab model: what every later speed-up is measured against.

``measure_baseline`` trains the lab model on one process (one thread, as each rank gets) with AdamW until
the training loss reaches ``target_loss`` or ``max_steps``; it returns the median step time, the steps it
took, and the loss curve. Timings on a shared 2-core machine are noisy: the median of many steps is what we
quote.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import torch
from torch import nn

from course_dist.labkit.lab01.model import ModelConfig, build_model, make_data, model_config


def measure_baseline(
    target_loss: float,
    batch: int = 64,
    max_steps: int = 200,
    lr: float = 3e-3,
    cfg: ModelConfig | None = None,
    threads: int = 1,
) -> dict[str, Any]:
    """Train on one worker until ``loss <= target_loss``: ``step_s`` (median), ``steps_to_target`` (None if
    not reached in ``max_steps``), ``losses`` (one per step), ``batch``, ``n_params``."""
    if not target_loss > 0:
        raise ValueError(f"target_loss must be > 0, got {target_loss!r}")
    cfg = cfg or model_config()
    old = torch.get_num_threads()
    torch.set_num_threads(threads)  # one thread: what one rank of launch(threads_per_rank=1) gets
    try:
        model = build_model(cfg)
        opt = torch.optim.AdamW(model.parameters(), lr=lr)
        x_all, y_all = make_data(batch * 16, cfg)
        losses, times, reached = [], [], None
        for step in range(max_steps):
            i = (step % 16) * batch
            x, y = x_all[i : i + batch], y_all[i : i + batch]
            t0 = time.perf_counter()
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            times.append(time.perf_counter() - t0)
            losses.append(float(loss.detach()))
            if reached is None and losses[-1] <= target_loss:
                reached = step + 1
                break
    finally:
        torch.set_num_threads(old)
    return {
        "step_s": statistics.median(times[1:] or times),
        "steps_to_target": reached,
        "losses": losses,
        "batch": batch,
        "n_params": sum(p.numel() for p in model.parameters()),
    }
