"""Atomic, step-numbered checkpoints published with a two-phase commit: a checkpoint is either complete under
its final name - every rank's file present and checksummed - or not there at all.

Layout under ``root``::

    step-00000040/shared.pt        model, optimizer, scheduler, sampler, step, config, dataset (rank 0)
    step-00000040/rank-00000.pt    that rank's RNG states (one per rank: rank-00000 ... rank-<world-1>)
    step-00000040/manifest.json    world_size, sha256 and size of every file - written LAST: the commit
                                   record
    latest                         "step-00000040" - a hint; the scan below is the source of truth

Protocol (the naive version - ``torch.save`` straight to ``step-N/`` - leaves a half-written checkpoint under
its final name when the job is killed mid-write; a manifest that lists whatever ``iterdir()`` shows publishes
a checkpoint without the rank whose file never arrived):

1. rank 0 creates ``.tmp-step-N/``; everyone waits for it (a gather used as a barrier);
2. *prepare*: every rank writes its file(s), fsyncs them and reports ``{file: {sha256, bytes}}``; the reports
   are gathered - a rank that died here makes the gather fail on the survivors, and nothing is published;
3. *commit* (rank 0): the manifest must name ``shared.pt`` and all ``world_size`` rank files, else refuse;
   write it, fsync it (with rank 0's own small rank file and the ``latest`` pointer, in one batch), fsync the
   staging folder, rename ``.tmp-step-N`` -> ``step-N`` (atomic on POSIX), move the pointer to ``latest``,
   fsync the parent, prune complete checkpoints older than this one down to ``keep_last``; the outcome is
   gathered again, so no rank returns before the checkpoint is published (or all raise).

Cost: a file is serialised once, straight into its file, and hashed from the page cache by a second thread
while the first waits for its fsync (torch's own crc32 is off for these writes: the sha256 covers every
byte); ``bench/bench_checkpoint.py`` compares the save with a durable ``torch.save`` + fsync and with DCP.

``verify_checkpoint`` trusts a folder only when its manifest names every rank file of its world size and every
checksum matches; ``latest_checkpoint`` returns the newest such folder (the trainer calls it on rank 0 only
and broadcasts the choice). Multi-node runs need ``root`` on a filesystem every rank sees.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from .durable import _fsync_all, _fsync_dir, _fsync_file, _hash_into, _no_crc32, _sha256

log = logging.getLogger(__name__)

_STEP_DIR = re.compile(r"^step-(\d{8})$")
MANIFEST = "manifest.json"


def step_dir(root: str | os.PathLike[str], step: int) -> Path:
    return Path(root) / f"step-{step:08d}"


Gather = Callable[[Any], list[Any]]


def _gather_local(obj: Any) -> list[Any]:
    return [obj]


def rank_file(rank: int) -> str:
    return f"rank-{rank:05d}.pt"


def _write_durable(path: Path, obj: Any, sync: bool = True) -> dict[str, Any]:
    """``torch.save`` straight into ``path`` (torch's own writer: one serialisation, no copy of the state in
    memory), then fsync - while a second thread hashes the file from the page cache, so the sha256 costs
    no time of its own: it runs while this thread waits for the disk. Returns the report of one file.
    ``sync=False`` leaves the fsync to the caller, who must do it before the rename that publishes the file.

    torch's per-record crc32 is switched off for this write: the manifest's sha256 covers every byte of the
    file and is checked before any load, and computing both would cost a second pass over the state on the
    critical path (the crc32 is computed while writing, before the fsync can start)."""
    with _no_crc32():
        torch.save(obj, path)
    digest: dict[str, Any] = {}
    hasher = threading.Thread(target=_hash_into, args=(path, digest), daemon=True)
    hasher.start()
    try:
        if sync:
            _fsync_file(path)  # on disk before the manifest can point at it
    finally:
        hasher.join()
    if "error" in digest:
        raise digest["error"]
    return {"sha256": digest["sha256"], "bytes": digest["bytes"]}


def _retire(path: Path) -> None:
    """Move a folder out of the ``step-N`` namespace first, then delete it: a crash mid-delete leaves debris
    that is never a resume candidate, not a half-deleted checkpoint under its final name."""
    trash = path.with_name(f".trash-{path.name}")
    if trash.exists():
        shutil.rmtree(trash, ignore_errors=True)
    os.replace(path, trash)
    shutil.rmtree(trash, ignore_errors=True)


def save_checkpoint(
    root: str | os.PathLike[str],
    step: int,
    shared: dict[str, Any] | None,
    local: dict[str, Any],
    rank: int,
    world_size: int,
    keep_last: int = 3,
    gather: Gather | None = None,
) -> Path:
    """Publish step ``step`` with a two-phase commit (every rank calls this; ``shared`` only matters on
    rank 0).

    ``gather(obj)`` returns every rank's ``obj`` in rank order on every rank (``all_gather_object``; None in a
    single process). Returns the published folder on every rank; raises on every rank when it was not
    published.
    """
    if keep_last < 1:
        raise ValueError(f"keep_last must be >= 1, got {keep_last}")
    gather = gather or _gather_local
    root = Path(root)
    tmp = root / f".tmp-step-{step:08d}"
    final = step_dir(root, step)
    if rank == 0:
        if shared is None:
            raise ValueError("rank 0 must pass the shared state")
        root.mkdir(parents=True, exist_ok=True)
        if tmp.exists():  # debris of an earlier attempt killed mid-write
            shutil.rmtree(tmp)
        tmp.mkdir()
    gather(None)  # the staging folder exists before anyone writes into it
    # phase 1 (prepare): my files, durable, and their digests (rank 0's small rank file is fsynced with the
    # manifest, in one batch before the publishing rename: one journal commit less)
    report = {rank_file(rank): _write_durable(tmp / rank_file(rank), local, sync=rank != 0)}
    if rank == 0:
        report["shared.pt"] = _write_durable(tmp / "shared.pt", shared)
    reports = gather({"rank": rank, "files": report})
    # phase 2 (commit): rank 0 publishes only a checkpoint that holds every rank's file
    outcome = None
    if rank == 0:
        try:
            _commit(root, tmp, final, step, world_size, reports, keep_last)
        except Exception as e:  # every rank must learn it: nobody may go on believing step N is saved
            outcome = f"{type(e).__name__}: {e}"
    outcomes = gather(outcome)
    if outcomes[0] is not None:
        raise RuntimeError(
            f"checkpoint of step {step} was not published: rank 0 failed to commit: {outcomes[0]}"
        )
    return final


def _commit(
    root: Path, tmp: Path, final: Path, step: int, world_size: int, reports: list[Any], keep_last: int
) -> None:
    files: dict[str, Any] = {}
    for r, rep in enumerate(reports):
        if not rep or rep.get("rank") != r or rank_file(r) not in rep.get("files", {}):
            raise RuntimeError(f"rank {r} did not report its file {rank_file(r)} (report: {rep!r})")
        files.update(rep["files"])
    required = _required(world_size)
    missing = sorted(required - set(files))
    if len(reports) != world_size or missing:
        raise RuntimeError(f"{len(reports)} reports for world {world_size}; missing files {missing}")
    manifest = {"step": step, "world_size": world_size, "created": time.time(), "files": files}
    (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1))  # written last: the commit record
    pointer = root / ".latest.tmp"  # outside the staging folder; moved to `latest` only after publication
    pointer.write_text(final.name)
    # one journal commit for the three, before the publishing rename
    _fsync_all([tmp / rank_file(0), tmp / MANIFEST, pointer])
    _fsync_dir(tmp)
    if final.exists():  # same step saved again (e.g. SIGTERM right after a periodic save, or a redo)
        _retire(final)
    os.replace(tmp, final)  # atomic: readers see no folder or the whole one
    os.replace(pointer, root / "latest")  # after the checkpoint it names is published
    _fsync_dir(root)  # both renames durable (a lost `latest` only costs the scan: it is a hint)
    prune(root, keep_last, newest=step)
    log.info("checkpoint %s published (%d files, world %d)", final, len(files), world_size)


def _required(world_size: int) -> set[str]:
    return {"shared.pt", *(rank_file(r) for r in range(world_size))}


def checkpoint_problem(path: str | os.PathLike[str], hash_files: bool = True) -> str | None:
    """Why ``path`` is not a complete checkpoint (None when it is): manifest missing or unreadable, a rank
    file of its world size not listed, a listed file missing, of another size or (``hash_files``) another
    sha256."""
    path = Path(path)
    try:
        manifest = json.loads((path / MANIFEST).read_text())
        world, files = int(manifest["world_size"]), manifest["files"]
    except FileNotFoundError:
        return "no manifest (an interrupted save)"
    except (OSError, ValueError, KeyError, TypeError) as e:
        return f"unreadable manifest ({type(e).__name__}: {e})"
    missing = sorted(_required(world) - set(files))
    if world < 1 or missing:
        return f"manifest of world {world} does not list {missing}"
    for name, info in files.items():
        f = path / name
        try:
            size = f.stat().st_size
        except OSError:
            return f"{name} is missing"
        if size != info["bytes"]:
            return f"{name} has {size} bytes, the manifest says {info['bytes']}"
        if hash_files and _sha256(f) != info["sha256"]:
            return f"{name} fails its sha256 check"
    return None


def verify_checkpoint(path: str | os.PathLike[str]) -> bool:
    """True when ``path``'s manifest names ``shared.pt`` and all ``world_size`` rank files, and every listed
    file is present with its size and sha256."""
    return checkpoint_problem(path) is None


def list_checkpoints(root: str | os.PathLike[str]) -> list[Path]:
    """Folders named ``step-N`` under ``root``, newest first (complete or not)."""
    root = Path(root)
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if p.is_dir() and _STEP_DIR.match(p.name)]
    return sorted(found, key=lambda p: p.name, reverse=True)


def latest_checkpoint(root: str | os.PathLike[str]) -> Path | None:
    """The newest checkpoint that verifies, or None. Skips (and logs why) incomplete or corrupt ones."""
    for path in list_checkpoints(root):
        why = checkpoint_problem(path)
        if why is None:
            return path
        log.warning("skipping checkpoint %s: %s", path, why)
    return None


def load_checkpoint(path: str | os.PathLike[str], rank: int) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """``(shared, local)`` of a verified checkpoint, loaded onto the CPU (the caller moves what it
    needs: under
    NCCL a plain ``torch.load`` would put every rank's tensors on the GPU they were saved from).

    ``local`` is None only when rank ``rank`` did not exist in the saved run (``rank >= world_size`` saved);
    a rank of the saved world whose file is missing is an error, never "a new rank"."""
    path = Path(path)
    manifest = json.loads((path / MANIFEST).read_text())
    saved_world = int(manifest["world_size"])
    # weights_only=False: these files are ours (written by save_checkpoint, verified against the manifest)
    shared = torch.load(path / "shared.pt", map_location="cpu", weights_only=False)
    own = path / rank_file(rank)
    if rank < saved_world:
        if not own.is_file():
            raise FileNotFoundError(
                f"{own} is missing from a world-{saved_world} checkpoint: refusing to resume"
            )
        return shared, torch.load(own, map_location="cpu", weights_only=False)
    return shared, None


def prune(root: str | os.PathLike[str], keep_last: int, newest: int | None = None) -> list[Path]:
    """Keep the newest ``keep_last`` complete checkpoints; delete older complete ones and staging debris.

    Only complete checkpoints (manifest with every rank file, sizes match) count and are deleted; with
    ``newest`` (the step just written) nothing at or after that step is touched, so a save never deletes
    itself. Incomplete ``step-N`` folders are left alone (never resumed; an operator may want to look)."""
    if keep_last < 1:
        raise ValueError(f"keep_last must be >= 1, got {keep_last}")
    root = Path(root)
    complete = [p for p in list_checkpoints(root) if checkpoint_problem(p, hash_files=False) is None]
    doomed = [p for p in complete[keep_last:] if newest is None or _step_of(p) < newest]
    # debris of saves killed mid-write: only rank 0 prunes, after every rank finished writing this step
    debris = [p for p in root.glob(".tmp-step-*") if p.is_dir()] + [
        p for p in root.glob(".trash-*") if p.is_dir()
    ]
    for p in doomed:
        _retire(p)
    for p in debris:
        shutil.rmtree(p, ignore_errors=True)
    return doomed + debris


def _step_of(path: Path) -> int:
    m = _STEP_DIR.match(path.name)
    if not m:
        raise ValueError(f"not a checkpoint folder name: {path.name!r}")
    return int(m.group(1))
