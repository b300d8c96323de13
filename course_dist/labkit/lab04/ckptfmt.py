"""The on-disk checkpoint format every lab-04 exercise shares, and the drills' oracle for it.

    root/step-00000012/<name>.pt        one torch.save'd part per file (rank files: rank00-<name>.pt, ...)
    root/step-00000012/manifest.json    {"step": 12, "files": {"<file>": {"bytes": n, "sha256": hex}}, ...}
    root/latest                         text: "step-00000012"

:func:`verify_dir` checks a directory against its manifest, independent of any student code.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

MANIFEST = "manifest.json"


@dataclass
class Loaded:
    """What a checkpoint loader returns: the step, the directory, the parts, why newer ones were skipped."""

    step: int
    path: Path
    parts: dict[str, Any]
    skipped: dict[str, str] = field(default_factory=dict)  # directory name -> reason


def step_dir_name(step: int) -> str:
    return f"step-{step:08d}"


def demo_parts(step: int, rank: int = 0) -> dict[str, Any]:
    """Deterministic stand-in state for ``step`` (different bytes for every step and rank)."""
    g = torch.Generator().manual_seed(1000 * step + rank)
    return {
        "model": {"w": torch.randn(64, 64, generator=g), "b": torch.randn(64, generator=g)},
        "optimizer": {"exp_avg": torch.randn(64, 64, generator=g), "step": step},
        "meta": {"step": step, "rank": rank, "rng": np.random.RandomState(step).get_state()},
    }


def same(a: Any, b: Any) -> bool:
    """Deep equality for checkpoint parts (tensors bitwise, arrays elementwise)."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and torch.equal(a.cpu(), b.cpu())
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return isinstance(b, list | tuple) and len(a) == len(b) and all(map(same, a, b))
    return a == b


def verify_dir(path: str | os.PathLike, world_size: int | None = None) -> str | None:
    """The drills' oracle: None if ``path`` is a complete checkpoint, else the reason it is not."""
    path = Path(path)
    try:
        manifest = json.loads((path / MANIFEST).read_text())
        files = manifest["files"]
    except FileNotFoundError:
        return "no manifest"
    except (ValueError, KeyError, TypeError) as e:
        return f"unreadable manifest ({e})"
    for name, meta in files.items():
        f = path / name
        if not f.is_file():
            return f"{name} listed in the manifest but missing"
        data = f.read_bytes()
        if len(data) != meta["bytes"] or hashlib.sha256(data).hexdigest() != meta["sha256"]:
            return f"{name}: size or sha256 does not match the manifest"
    if world_size is not None:
        for r in range(world_size):
            if not any(n.startswith(f"rank{r:02d}-") for n in files):
                return f"manifest lists no file of rank {r} (world size {world_size})"
    return None
