"""Lab 04 exercise 3 demo: what ``torch.distributed.checkpoint`` (DCP) writes and how it reshards at load.

A 2-D weight is sharded on dim 0 over the ranks (a DTensor, as FSDP2 holds it). Saved at world 2, DCP writes
one ``__<rank>_0.distcp`` file per rank plus ``.metadata`` (written last by the coordinator: the commit
marker); loaded at world 3 (three shards) and world 1 (one plain tensor), each rank reads only the byte ranges
it needs.

    from course_dist.labkit import lab04_dcp
    lab04_dcp.demo("/tmp/dcp-demo")          # a DataFrame: files, sizes, and the resharded loads
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import torch

import course_dist

ROWS, COLS = 12, 8


def _full() -> torch.Tensor:
    return torch.arange(ROWS * COLS, dtype=torch.float32).reshape(ROWS, COLS)


def _save(path: str) -> list[int]:
    import torch.distributed.checkpoint as dcp
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor

    mesh = init_device_mesh(course_dist.device().type, (course_dist.world_size(),))
    w = distribute_tensor(_full().to(course_dist.device()), mesh, [Shard(0)])
    dcp.save({"w": w, "step": 7}, checkpoint_id=path)  # SPMD: every rank calls it with its own shard
    return list(w.to_local().shape)


def _load(path: str, sharded: bool) -> dict:
    import torch.distributed.checkpoint as dcp
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor

    dev = course_dist.device()
    if sharded:
        mesh = init_device_mesh(dev.type, (course_dist.world_size(),))
        w = distribute_tensor(torch.zeros(ROWS, COLS, device=dev), mesh, [Shard(0)])
    else:
        w = torch.zeros(ROWS, COLS, device=dev)
    state = {"w": w, "step": 0}
    dcp.load(state, checkpoint_id=path)  # in place, into the pre-allocated layout of *this* world size
    local = w.to_local() if sharded else w
    full = w.full_tensor() if sharded else w
    return {
        "local_shape": list(local.shape),
        "exact": bool(torch.equal(full.cpu(), _full())),
        "step": state["step"],
    }


def demo(path: str | os.PathLike, timeout: float = 60.0) -> pd.DataFrame:
    """Save at world 2, list the files, load at world 3 (sharded) and world 1 (plain); one table of it all."""
    path = str(path)
    shapes = course_dist.launch(_save, 2, args=(path,), timeout=timeout, stream=False)
    files = sorted((p.name, p.stat().st_size) for p in Path(path).iterdir())
    rows = [{"what": f"file {n}", "detail": f"{s} bytes"} for n, s in files]
    rows.append({"what": "saved at world 2", "detail": f"local shards {shapes}"})
    for world, sharded in ((3, True), (1, False)):
        res = course_dist.launch(_load, world, args=(path, sharded), timeout=timeout, stream=False)
        rows.append(
            {
                "what": f"loaded at world {world}",
                "detail": f"local shapes {[r['local_shape'] for r in res]},"
                f" equal to the saved tensor: {all(r['exact'] for r in res)}, step {res[0]['step']}",
            }
        )
    return pd.DataFrame(rows)
