"""Who am I? ``rank()``, ``world_size()``, ``device()`` in a rank of ``launch`` or ``course_dist.run``.

The launcher (or the torchrun entry point) fills in this module's state before calling the user's function.
Outside any launch the answers fall back to an initialized ``torch.distributed`` group, then to a single
process (rank 0 of 1 on the CPU), so the same cell also runs unchanged in a plain notebook.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any


@dataclass
class _State:
    rank: int | None = None
    world_size: int | None = None
    device: Any = None  # torch.device, kept as Any so importing this module does not import torch
    backend: str | None = None
    run_dir: str | None = None  # per-launch temp dir (None under torchrun)


STATE = _State()


def _dist_if_initialized() -> Any:
    # Only look at torch.distributed if torch was already imported: rank() must stay cheap.
    if "torch.distributed" not in sys.modules:
        return None
    import torch.distributed as dist

    return dist if dist.is_available() and dist.is_initialized() else None


def rank() -> int:
    """This process's global rank (0 outside any process group)."""
    if STATE.rank is not None:
        return STATE.rank
    dist = _dist_if_initialized()
    return dist.get_rank() if dist is not None else 0


def world_size() -> int:
    """Number of ranks in the job (1 outside any process group)."""
    if STATE.world_size is not None:
        return STATE.world_size
    dist = _dist_if_initialized()
    return dist.get_world_size() if dist is not None else 1


def device() -> Any:
    """This rank's ``torch.device``: ``cuda:<local rank>`` under NCCL, else ``cpu``."""
    if STATE.device is not None:
        return STATE.device
    import torch

    return torch.device("cpu")
