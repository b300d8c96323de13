"""Stretch A's drill: a two-phase distributed save at world 2, clean and with a rank killed mid-save.

Every rank passes its own ``parts`` and the same replicated ``shared`` state (as a data-parallel trainer
holds it); the save must write the shared files on rank 0 only (several ranks writing one path race, and the
manifest would keep whichever hash came last). Every rank's file operations are recorded (:mod:`.recorder`):
each file in the staging directory must be fsynced by the rank that wrote it. Never a solution.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

import course_dist

from .ckptfmt import demo_parts, step_dir_name
from .drills import _invariants
from .recorder import _Ops, namespaces_of

SaveFn = Callable[..., Any]


def _rank_save(save: SaveFn, root: str, step: int, kill: dict[int, int] | None, keep: int) -> list[dict]:
    """Runs on every rank: save this rank's parts and the shared model; die at op ``kill[rank]`` if given.
    Returns this rank's recorded file operations."""
    r = course_dist.rank()
    ops = _Ops(Path(root), (kill or {}).get(r), None)
    ops.install(namespaces_of(save))
    try:
        save(root, step, demo_parts(step, rank=r), shared={"model": demo_parts(step)["model"]}, keep=keep)
    finally:
        ops.uninstall()
    return [dict(rec, rank=r) for rec in ops.records]


def _rank_problems(records: list[dict], d: Path) -> list[str]:
    problems = []
    shared = sorted({x["path"] for x in records if x["rank"] != 0 and x["op"] == "open"
                     and "shared-" in x["path"]})
    if shared:
        problems.append(f"ranks other than 0 opened shared files {shared[:2]}: write them on rank 0 only")
    pub = [x for x in records if x["op"] == "rename" and x["path"] == d.name and x["src"]]
    if pub:
        tmp = pub[0]["src"]
        for f in pub[0].get("contents") or []:
            path = f"{tmp}/{f}"
            if not any(x["op"] == "fsync" and x["path"] == path for x in records):
                problems.append(f"{path} was never fsynced by the rank that wrote it")
    return problems


def distributed_drill(
    save: SaveFn,
    *,
    world_size: int = 2,
    kill_points: tuple[tuple[int, int], ...] = ((1, 2),),
    clean_saves: int = 2,
    timeout: float = 60.0,
) -> pd.DataFrame:
    """``clean_saves`` clean distributed saves (steps 1, 2, ...), then one save of step 3 per ``(rank, op)``
    kill point; check the published state each time."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="lab04-dist-") as tmp:
        base = Path(tmp) / "base"
        base.mkdir()
        for s in range(1, clean_saves + 1):
            recs = course_dist.launch(_rank_save, world_size, args=(save, str(base), s, None, 2),
                                      timeout=timeout, stream=False)
            problems = _invariants(base, world_size)
            d = base / step_dir_name(s)
            problems += _rank_problems([x for rank in recs for x in rank], d)
            if not d.is_dir():
                problems.append(f"{d.name} was not published")
            else:
                for r in range(world_size):
                    mine = sorted(p for p in d.iterdir() if p.name.startswith(f"rank{r:02d}-"))
                    if not mine:
                        problems.append(f"{d.name} holds no file of rank {r}")
                if not (list(d.glob("shared-*")) or list(d.glob("rank00-model*"))):
                    problems.append(f"{d.name} holds no shared model file")
            rows.append(
                {"case": f"clean save of step {s}", "published": d.is_dir(), "problems": "; ".join(problems)}
            )
        for rank, op in kill_points:
            root = Path(tmp) / f"kill{rank}_{op}"
            shutil.copytree(base, root)
            err = ""
            try:
                course_dist.launch(
                    _rank_save, world_size, args=(save, str(root), 3, {rank: op}, 2), timeout=timeout,
                    stream=False,
                )
            except Exception as e:  # noqa: BLE001 - a RankError is the expected outcome
                err = type(e).__name__
            problems = _invariants(root, world_size)
            pub = (root / step_dir_name(3)).is_dir()
            if pub:
                problems.append(f"{step_dir_name(3)} was published although rank {rank} died at its op {op}")
            if not err:
                problems.append(f"the launch did not fail although rank {rank} was killed at op {op}")
            rows.append(
                {
                    "case": f"rank {rank} killed at its file op {op}",
                    "published": pub,
                    "problems": "; ".join(problems),
                    "launch_error": err,
                }
            )
    return pd.DataFrame(rows)
