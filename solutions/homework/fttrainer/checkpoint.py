"""Atomic, step-numbered checkpoints: a checkpoint is either complete under its final name, or not there at
all.

Layout under ``root``::

    step-00000040/shared.pt        model, optimizer, scheduler, sampler, step, config, dataset (rank 0)
    step-00000040/rank-00000.pt    that rank's RNG states (every rank)
    step-00000040/manifest.json    sha256 + size of every file - written LAST: the commit marker
    latest                         "step-00000040" - a hint; the scan below is the source of truth

Protocol (the naive version - ``torch.save`` straight to ``step-N/`` - leaves a half-written checkpoint under
its final name when the job is killed mid-write, and the next start loads garbage or crashes):

1. every rank writes its files into ``.tmp-step-N/`` and fsyncs them; barrier;
2. rank 0 hashes them, writes ``manifest.json`` (fsync), renames ``.tmp-step-N`` -> ``step-N`` (atomic on
   POSIX), fsyncs the parent directory, then replaces ``latest`` the same way; prunes to the newest
   ``keep_last``; barrier.

``latest_checkpoint`` trusts only folders whose manifest verifies, newest first. Multi-node runs need ``root``
on a filesystem every rank sees (and rename is atomic within it).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

import torch

log = logging.getLogger(__name__)

_STEP_DIR = re.compile(r"^step-(\d{8})$")
MANIFEST = "manifest.json"


def step_dir(root: str | os.PathLike[str], step: int) -> Path:
    return Path(root) / f"step-{step:08d}"


def _fsync_file(path: Path) -> None:
    with open(path, "rb") as f:
        os.fsync(f.fileno())


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def save_checkpoint(
    root: str | os.PathLike[str],
    step: int,
    shared: dict[str, Any] | None,
    local: dict[str, Any],
    rank: int,
    world_size: int,
    keep_last: int = 3,
    barrier: Any = None,
) -> Path:
    """Write step ``step`` atomically (every rank calls this; ``shared`` is only needed on rank 0).

    ``barrier`` is a zero-argument callable that synchronises all ranks (None in a single process).
    """
    sync = barrier or (lambda: None)
    root = Path(root)
    tmp = root / f".tmp-step-{step:08d}"
    final = step_dir(root, step)
    if rank == 0:
        root.mkdir(parents=True, exist_ok=True)
        if tmp.exists():  # debris of an earlier attempt killed mid-write
            shutil.rmtree(tmp)
        tmp.mkdir()
    sync()
    if rank == 0:
        if shared is None:
            raise ValueError("rank 0 must pass the shared state")
        torch.save(shared, tmp / "shared.pt")
        _fsync_file(tmp / "shared.pt")
    name = f"rank-{rank:05d}.pt"
    torch.save(local, tmp / name)
    _fsync_file(tmp / name)
    sync()
    if rank == 0:
        files = sorted(p.name for p in tmp.iterdir())
        manifest = {
            "step": step,
            "world_size": world_size,
            "created": time.time(),
            "files": {n: {"sha256": _sha256(tmp / n), "bytes": (tmp / n).stat().st_size} for n in files},
        }
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1))
        _fsync_file(tmp / MANIFEST)
        _fsync_dir(tmp)
        if final.exists():  # same step saved again (e.g. SIGTERM right after a periodic save)
            shutil.rmtree(final)
        os.replace(tmp, final)
        _fsync_dir(root)
        pointer = root / ".latest.tmp"
        pointer.write_text(final.name)
        _fsync_file(pointer)
        os.replace(pointer, root / "latest")
        _fsync_dir(root)
        prune(root, keep_last)
        log.info("checkpoint %s written (%d files)", final, len(files))
    sync()
    return final


def verify_checkpoint(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` has a manifest and every file it lists is present with its size and sha256."""
    path = Path(path)
    try:
        manifest = json.loads((path / MANIFEST).read_text())
        for name, info in manifest["files"].items():
            f = path / name
            if f.stat().st_size != info["bytes"] or _sha256(f) != info["sha256"]:
                return False
        return "shared.pt" in manifest["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return False


def list_checkpoints(root: str | os.PathLike[str]) -> list[Path]:
    """Folders named ``step-N`` under ``root``, newest first (complete or not)."""
    root = Path(root)
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if p.is_dir() and _STEP_DIR.match(p.name)]
    return sorted(found, key=lambda p: p.name, reverse=True)


def latest_checkpoint(root: str | os.PathLike[str]) -> Path | None:
    """The newest checkpoint whose manifest verifies, or None. Skips (and logs) incomplete or corrupt ones."""
    for path in list_checkpoints(root):
        if verify_checkpoint(path):
            return path
        log.warning("skipping incomplete or corrupt checkpoint %s", path)
    return None


def load_checkpoint(path: str | os.PathLike[str], rank: int) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """``(shared, local)`` of a verified checkpoint; ``local`` is None if rank ``rank`` did not exist in
    it."""
    path = Path(path)
    shared = torch.load(path / "shared.pt", weights_only=False)
    own = path / f"rank-{rank:05d}.pt"
    local = torch.load(own, weights_only=False) if own.exists() else None
    return shared, local


def prune(root: str | os.PathLike[str], keep_last: int) -> list[Path]:
    """Delete all but the newest ``keep_last`` complete checkpoints (and nothing that is not
    complete-and-older)."""
    if keep_last < 1:
        raise ValueError(f"keep_last must be >= 1, got {keep_last}")
    complete = [p for p in list_checkpoints(root) if (p / MANIFEST).exists()]
    doomed = complete[keep_last:]
    # Debris of saves killed mid-write: only rank 0 calls prune, after every rank finished writing this step.
    doomed += [p for p in Path(root).glob(".tmp-step-*") if p.is_dir()]
    for p in doomed:
        shutil.rmtree(p, ignore_errors=True)
    return doomed
