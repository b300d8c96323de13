"""The on-disk checkpoint format every lab-04 exercise shares, and the drills' oracle for it.

    root/step-00000012/<name>.pt        one torch.save'd part per file (rank files: rank00-<name>.pt, ...)
    root/step-00000012/manifest.json    {"step": 12, "files": {"<file>": {"bytes": n, "sha256": hex}}, ...}
    root/latest                         text: "step-00000012"

:func:`verify_dir` checks a directory against its manifest (exercise 2's loader uses it), :func:`retire`
and :func:`prune` are the retention exercise 2's save calls (given: the exercise is the publication protocol).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
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


def verify_dir(path: str | os.PathLike, world_size: int | None = None, *, deep: bool = True) -> str | None:
    """None if ``path`` is a complete checkpoint (every file its manifest lists: size and, if ``deep``,
    sha256), else the reason it is not. ``deep=False`` tells a finished save from an interrupted one without
    re-reading the data (what retention needs); a loader checks deep."""
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
        if f.stat().st_size != meta["bytes"]:
            return f"{name}: {f.stat().st_size} bytes, the manifest says {meta['bytes']} (truncated)"
        if deep and hashlib.sha256(f.read_bytes()).hexdigest() != meta["sha256"]:
            return f"{name}: sha256 does not match the manifest (corrupted)"
    if world_size is not None:
        for r in range(world_size):
            if not any(n.startswith(f"rank{r:02d}-") for n in files):
                return f"manifest lists no file of rank {r} (world size {world_size})"
    return None


def retire(d: str | os.PathLike) -> None:
    """Delete checkpoint directory ``d`` crash-safely: rename it out of the ``step-`` namespace first
    (``.trash-<name>``, clearing debris an earlier crashed delete left there), then delete that."""
    d = Path(d)
    trash = d.parent / f".trash-{d.name}"
    shutil.rmtree(trash, ignore_errors=True)
    os.replace(d, trash)
    shutil.rmtree(trash)


def prune(root: str | os.PathLike, final: str | os.PathLike, keep: int) -> list[str]:
    """Retention after ``final`` was published: keep the newest ``keep`` complete checkpoints, ``final``
    included, by retiring only *complete* (sizes, ``deep=False``) checkpoints *older* than ``final``: never a
    newer one (after resuming past a broken newer checkpoint it is still there), never an incomplete one.
    The caller refuses ``keep < 1``. Returns the retired directory names."""
    root, final = Path(root), Path(final)
    older = [d for d in sorted(root.glob("step-*")) if d.is_dir() and d.name < final.name]
    complete = [d for d in older if verify_dir(d, deep=False) is None]
    gone = complete[: max(0, len(complete) - (keep - 1))]
    for d in gone:
        retire(d)
    return [d.name for d in gone]
