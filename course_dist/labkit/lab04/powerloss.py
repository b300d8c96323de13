"""Simulated power loss: what the disk holds when the machine dies, not just the process.

A SIGKILL never loses data: the page cache belongs to the kernel, and it writes everything out later. A power
cut (or a kernel panic, or a node that vanishes) loses everything that was not made durable. This module
replays a recorded save (:mod:`.recorder`) under the pessimistic model the POSIX contract allows (ext4's
delayed allocation really behaves like this: renamed-but-never-fsynced files come back with zero bytes):

- a file's **data** survives only if the file was fsynced after its last write (else it comes back empty);
- a directory **entry** (a created file or directory, a rename's new name) survives only if its parent
  directory was fsynced after the entry was made; a rename that did not survive leaves the object under its
  old name, a replaced entry (``latest``) comes back with its old contents;
- a deletion or rename-away of something that existed before the save is undone unless the root was fsynced
  after it (the old checkpoint comes back: harmless, the loader picks the newest complete one).

Everything that existed before the save (``base``) counts as durable. Paths are relative to the root; the
recorder follows directory renames, so a file written as ``.tmp-step-2/a.pt`` and fsynced under that name is
the same file as ``step-2/a.pt``. Never a solution: it only reads the operation log and edits a copy.
"""

from __future__ import annotations

import math
import os
import shutil
from pathlib import Path


def _aliases(path: str, renames: list[tuple[int, str, str]]) -> set[str]:
    """Every name the object now at ``path`` had, walking the renames (of it or of a parent) backwards."""
    out, p = {path}, path
    for _, src, dst in reversed(renames):
        if p == dst or p.startswith(dst + "/"):
            p = src + p[len(dst):]
            out.add(p)
    return out


def _parent(path: str) -> str:
    return os.path.dirname(path) or "."


def _tree(root: Path) -> list[str]:
    """Every file and directory under ``root`` (relative), parents before children."""
    out = []
    for d, dirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        out += [os.path.normpath(os.path.join(rel, x)) for x in sorted(dirs) + sorted(files)]
    return sorted(out, key=lambda p: (p.count("/"), p))


def power_loss(root: str | os.PathLike, base: str | os.PathLike, records: list[dict],
               executed: int | None = None) -> list[str]:
    """Turn ``root`` (the tree the writer left) into what a power cut leaves; returns what was lost (text).

    ``base``: a copy of the root before the save. ``records``: the recorder's log; only operations with
    ``n < executed`` ran (the writer was killed before op ``executed``; None: all of them).
    """
    root, base = Path(root), Path(base)
    recs = [r for r in records if executed is None or r["n"] < executed]
    renames = [(r["n"], r["src"], r["path"]) for r in recs if r["op"] == "rename" and r["src"]]
    fsyncs = [(r["n"], r["path"]) for r in recs if r["op"] == "fsync"]

    def synced_after(names: set[str], n: float) -> bool:
        return any(m > n and p in names for m, p in fsyncs)

    def made(names: set[str]) -> tuple[float, dict | None]:
        """The last op that created one of ``names`` as an entry (open that created, mkdir, rename to)."""
        hits = [r for r in recs if r["path"] in names and (
            (r["op"] == "open" and r.get("created")) or r["op"] in ("mkdir", "rename"))]
        return (hits[-1]["n"], hits[-1]) if hits else (-math.inf, None)

    lost: list[str] = []
    gone: set[str] = set()
    for rel in _tree(root):
        if any(rel.startswith(g + "/") for g in gone):
            continue
        names = _aliases(rel, renames)
        n, rec = made(names)
        if rec is None and (base / rel).exists():
            continue  # an entry from before the save: durable
        parent = _aliases(_parent(rel), renames)
        if synced_after(parent, n if rec is not None else -math.inf):
            continue
        # the entry never reached the disk: undo it
        gone.add(rel)
        lost.append(f"entry {rel} (its directory was not fsynced after it was created or renamed)")
        here = root / rel
        src = rec["src"] if rec is not None and rec["op"] == "rename" else None
        if src and (base / src).exists() and not (root / src).exists():
            # an old entry renamed away (a retired checkpoint): the rename and the deletes inside it are lost
            shutil.rmtree(here) if here.is_dir() else here.unlink()
            (shutil.copytree if (base / src).is_dir() else shutil.copy2)(base / src, root / src)
        elif src and not (root / src).exists() and (root / _parent(src)).is_dir():
            os.replace(here, root / src)  # the rename is undone: the object is back under its old name
        elif here.is_dir():
            shutil.rmtree(here)
        else:
            here.unlink()
        if (base / rel).exists():  # it replaced an older entry (latest): that one comes back
            (shutil.copytree if (base / rel).is_dir() else shutil.copy2)(base / rel, here)
    for rel in _tree(root):
        here = root / rel
        if not here.is_file():
            continue
        names = _aliases(rel, renames)
        writes = [r["n"] for r in recs if r["path"] in names and r["op"] in ("open", "write")]
        if not writes and (base / rel).is_file() and (base / rel).read_bytes() == here.read_bytes():
            continue  # unchanged since before the save
        if not synced_after(names, max(writes, default=-math.inf)):
            here.write_bytes(b"")
            lost.append(f"data of {rel} (not fsynced after its last write)")
    for top in sorted(p.name for p in base.iterdir()):
        if (root / top).exists():
            continue
        gone_at = [r["n"] for r in recs if top in (r["path"], r.get("src"))]
        if not synced_after({"."}, max(gone_at, default=-math.inf)):
            (shutil.copytree if (base / top).is_dir() else shutil.copy2)(base / top, root / top)
    return lost
