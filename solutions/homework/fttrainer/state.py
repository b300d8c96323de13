"""What a checkpoint must hold for a resumed run to continue bit for bit.

Shared (identical on every rank, written once): model, optimizer (AdamW moments), LR scheduler, step, epoch,
the sampler's global position, the config and the dataset metadata. Per rank: every RNG the rank draws from
(torch CPU, CUDA, Python ``random``, NumPy) - dropout masks come from them, and torchtitan, for one, does not
save them.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from .config import TrainConfig
from .data import DatasetMeta
from .sampler import ElasticSampler


def rng_state() -> dict[str, Any]:
    """Every RNG state of this process."""
    state: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "python": random.getstate(),
        "numpy": np.random.get_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore every RNG state returned by :func:`rng_state`."""
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _unwrap(model: nn.Module) -> nn.Module:
    return model.module if isinstance(model, DDP) else model


def capture_state(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: Any,
    sampler: ElasticSampler,
    step: int,
    epoch: int,
    cfg: TrainConfig,
    meta: DatasetMeta,
    world_size: int,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(shared, local)``: the shared state (write once, from rank 0) and this rank's own state."""
    shared = {
        "model": _unwrap(model).state_dict(),  # unwrapped: loads with or without DDP, at any world size
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "sampler": sampler.state_dict(),
        "step": step,
        "epoch": epoch,
        "config": cfg.to_dict(),
        "dataset": meta.to_dict(),
        "world_size": world_size,
    }
    local = {"rng": rng_state(), "step": step}
    return shared, local


def restore_state(
    shared: dict[str, Any],
    local: dict[str, Any] | None,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: Any,
    sampler: ElasticSampler,
) -> tuple[int, int]:
    """Load a checkpoint into live objects; returns ``(step, epoch)``.

    ``local`` is None when this rank did not exist in the saved run (resumed on more ranks): its RNG then
    starts from a fresh, deterministic seed - exact continuation is only promised at the same world size. At
    the saved world size every rank must have its own ``local`` (a ValueError otherwise): reseeding a rank
    that existed would silently change its dropout masks.
    """
    if local is None and int(shared["world_size"]) == sampler.world_size:
        raise ValueError(
            f"rank {sampler.rank} has no saved state in a checkpoint of the same world size "
            f"{sampler.world_size}: refusing to resume with a reseeded RNG"
        )
    _unwrap(model).load_state_dict(shared["model"])
    optimizer.load_state_dict(shared["optimizer"])
    scheduler.load_state_dict(shared["scheduler"])
    sampler.load_state_dict(shared["sampler"])
    if local is not None:
        set_rng_state(local["rng"])
    else:
        seed = int(shared["config"]["seed"]) * 1000 + int(shared["step"]) + sampler.rank
        torch.manual_seed(seed)
        random.seed(seed)
        np.random.seed(seed % 2**32)
    return int(shared["step"]), int(shared["epoch"])
