"""Stretch C's machinery: a sharded (FSDP2) training state saved with ``torch.distributed.checkpoint`` (DCP).

``dcp.async_save`` copies the state to CPU memory (the only part training waits for), then writes every rank's
``__<rank>_0.distcp`` and the coordinator's ``.metadata`` in a background thread. DCP fsyncs each file and
writes ``.metadata`` through a temporary name, but it writes into the directory it is given, in place: a
reader that looks at that directory mid-save sees a torn checkpoint. The course's rule applies on top: save
into a staging directory, and publish it with one atomic rename once the write has finished.

:func:`dcp_drill` runs the student's ``publish(future, staging, final)`` and ``latest(root)`` at world 2 (two
clean saves, one save interrupted by a SIGKILLed rank), then resumes the newest published checkpoint at world
1 and 3 (DCP reshards at load) and compares the next steps with a run that never stopped. The stall of
``async_save`` against a blocking ``dcp.save`` is measured by :mod:`.dcpstall`. Never a solution.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd
import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch import nn
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_state_dict,
    set_state_dict,
)
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

import course_dist

GLOBAL_BATCH = 12  # divisible by world 1, 2, 3, 4: equal shards, the mean gradient the same at any world
RESUME_TOL = 1e-5  # world sizes sum the gradient shards in another order (measured ~3e-8 after 2 steps)
PUBLISH_DELAY_S = 0.5  # rank 0's rename is held back this long: a rank that returns before it is caught
WRITE_DELAY_S = 0.3  # each rank's background write starts this late: not waiting for it is caught


class SlowWriter(dcp.FileSystemWriter):
    """DCP's file system writer with each rank's write held back ``WRITE_DELAY_S`` (in the background thread):
    a publication that does not wait for the future then always finds the files missing."""

    def write_data(self, plan: Any, planner: Any) -> Any:
        time.sleep(WRITE_DELAY_S)
        return super().write_data(plan, planner)


def build(seed: int = 0, width: int = 64, depth: int = 2) -> tuple[nn.Module, torch.optim.Optimizer]:
    """An MLP sharded with FSDP2 (each linear layer one unit, then the root) over every rank, and AdamW."""
    if width < 1 or depth < 1:
        raise ValueError(f"width and depth must be >= 1, got width={width}, depth={depth}")
    torch.manual_seed(seed)
    layers: list[nn.Module] = [nn.Linear(16, width), nn.Tanh()]
    for _ in range(depth - 1):
        layers += [nn.Linear(width, width), nn.Tanh()]
    model = nn.Sequential(*layers, nn.Linear(width, 4))
    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model, torch.optim.AdamW(model.parameters(), lr=1e-2)


def train(model: nn.Module, opt: torch.optim.Optimizer, steps: range) -> None:
    """One optimizer step per ``steps`` item; step ``s``'s global batch is fixed by ``s`` alone, split evenly
    over the ranks (so the run does not depend on the world size)."""
    for s in steps:
        g = torch.Generator().manual_seed(1000 + s)
        x, y = torch.randn(GLOBAL_BATCH, 16, generator=g), torch.randn(GLOBAL_BATCH, 4, generator=g)
        w, r = dist.get_world_size(), dist.get_rank()
        loss = ((model(x.tensor_split(w)[r]) - y.tensor_split(w)[r]) ** 2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()


def full_params(model: nn.Module) -> torch.Tensor:
    """Every parameter, unsharded and flattened (a collective: every rank calls it)."""
    sd = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))
    return torch.cat([v.reshape(-1) for v in sd.values()])


def app_state(model: nn.Module, opt: torch.optim.Optimizer) -> dict[str, Any]:
    """DCP's input: this rank's shards of the model and optimizer state."""
    model_sd, optim_sd = get_state_dict(model, opt)
    return {"model": model_sd, "optim": optim_sd}


def load_into(model: nn.Module, opt: torch.optim.Optimizer, path: Path) -> None:
    """DCP load in place into this world size's shards (resharding), then into the model and optimizer."""
    state = app_state(model, opt)
    dcp.load(state, checkpoint_id=path)
    set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])


@contextmanager
def watch(root: Path, delay_rename_s: float = 0.0) -> Iterator[list[dict]]:
    """Record ``os.fsync`` (by the descriptor's path) and ``os.replace``/``os.rename`` (with the files the
    moved directory holds at that moment) under ``root``; hold each rename back ``delay_rename_s``."""
    real = {name: getattr(os, name) for name in ("fsync", "replace", "rename")}
    base = str(root.resolve())
    records: list[dict] = []

    def rel(p: str) -> str:
        p = os.path.abspath(p)
        return os.path.relpath(p, base) if p == base or p.startswith(base + os.sep) else ""

    def fsync(fd: int) -> None:
        path = rel(os.readlink(f"/proc/self/fd/{fd}")) if isinstance(fd, int) else ""
        real["fsync"](fd)
        if path:
            records.append({"op": "fsync", "path": path, "t": time.monotonic()})

    def renamer(name: str) -> Callable[..., None]:
        def move(src: Any, dst: Any, **kw: Any) -> None:
            s, d = rel(os.fspath(src)), rel(os.fspath(dst))
            contents = sorted(os.listdir(src)) if os.path.isdir(src) else None
            if delay_rename_s:
                time.sleep(delay_rename_s)
            real[name](src, dst, **kw)
            records.append({"op": "rename", "path": d, "src": s, "contents": contents, "t": time.monotonic()})

        return move

    os.fsync, os.replace, os.rename = fsync, renamer("replace"), renamer("rename")
    try:
        yield records
    finally:
        os.fsync, os.replace, os.rename = real["fsync"], real["replace"], real["rename"]


def publish_problems(records: list[dict], staging: str, final: str, world: int) -> list[str]:
    """The rules of a DCP publication, on rank 0's records: one rename of the staging directory holding
    ``.metadata`` and every rank's file; the staging directory fsynced before it, the root after it."""
    moves = [x for x in records if x["op"] == "rename" and x["path"] == final]
    if len(moves) != 1 or moves[0]["src"] != staging:
        got = [(x["src"], x["path"]) for x in moves]
        return [f"expected one rename {staging} -> {final} on rank 0, got {got}"]
    mv, problems = moves[0], []
    want = {".metadata", *(f"__{r}_0.distcp" for r in range(world))}
    missing = sorted(want - set(mv["contents"] or []))
    if missing:
        problems.append(f"{staging} was renamed before the write finished: it lacked {missing} "
                        f"(held {mv['contents']})")
    if not any(x["op"] == "fsync" and x["path"] == staging and x["t"] <= mv["t"] for x in records):
        problems.append(f"{staging} was not fsynced before its rename: its files' names are not durable")
    if not any(x["op"] == "fsync" and x["path"] == "." and x["t"] >= mv["t"] for x in records):
        problems.append(f"the root was not fsynced after the rename: {final} may vanish after a power loss")
    return problems


def _save_rank(publish: Callable, root: str, kill_step: int | None) -> dict[str, Any]:
    """World 2: train 6 steps, saving after steps 2 and 4 (published) and at 6 (rank 1 SIGKILLed as its
    write starts when ``kill_step`` is 6); returns the parameters after every step and what publish did."""
    rank, world, base = dist.get_rank(), dist.get_world_size(), Path(root)
    group = dist.new_group(backend="gloo")  # saves' collectives run in a thread: never beside training's
    model, opt = build()
    params, seen, problems = {}, {}, []
    for step in (2, 4, 6):
        train(model, opt, range(step - 2, step))
        params[step] = full_params(model)
        staging, final = base / f".tmp-step-{step:08d}", base / f"step-{step:08d}"
        fut = dcp.async_save(app_state(model, opt), storage_writer=SlowWriter(staging), process_group=group)
        if step == kill_step and rank == 1:
            os.kill(os.getpid(), signal.SIGKILL)  # mid-save: this rank's write has barely started
        with watch(base, PUBLISH_DELAY_S if rank == 0 else 0.0) as recs:
            got = publish(fut, staging, final)
        seen[step] = (final / ".metadata").is_file()  # the moment publish returned, on this rank
        if Path(got) != final:
            problems.append(f"step {step}: publish returned {got}, expected {final}")
        if rank == 0:
            problems += [f"step {step}: {p}" for p in publish_problems(recs, staging.name, final.name, world)]
        elif any(x["op"] == "rename" for x in recs):
            moved = [x["path"] for x in recs if x["op"] == "rename"]
            problems.append(f"step {step}: rank {rank} renamed {moved} (rank 0 alone publishes)")
    return {"params": params, "visible_on_return": seen, "problems": problems}


def _resume_rank(path: str, start: int, end: int) -> torch.Tensor:
    """Another world size: a model from another seed loads ``path`` and trains steps ``start..end-1``."""
    model, opt = build(seed=99)
    load_into(model, opt, Path(path))
    train(model, opt, range(start, end))
    return full_params(model)


def _row(case: str, got: Any, problems: list[str], error: str = "", diff: float = 0.0) -> dict[str, Any]:
    name = Path(got).name if got is not None else None
    return {"case": case, "latest": name, "error": error, "max_abs_diff": diff,
            "problems": "; ".join(problems)}


def dcp_drill(publish: Callable, latest: Callable, *, resume_worlds: tuple[int, ...] = (1, 3),
              timeout: float = 120.0) -> pd.DataFrame:
    """Rows: the world-2 run (saves of steps 2, 4, 6), the run whose rank 1 dies mid-save of step 6, and a
    resume from ``latest(root)`` per world size in ``resume_worlds``."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="lab04-dcp-") as tmp:
        clean, killed = Path(tmp) / "clean", Path(tmp) / "killed"
        clean.mkdir()
        killed.mkdir()
        kw = {"timeout": timeout, "stream": False}
        out = course_dist.launch(_save_rank, 2, args=(publish, str(clean), None), **kw)
        problems = [p for r in out for p in r["problems"]]
        late = [(r, s) for r, o in enumerate(out) for s, ok in o["visible_on_return"].items() if not ok]
        problems += [f"rank {r}: publish of step {s} returned before it was visible" for r, s in late]
        got = latest(clean)
        if got is None or Path(got).name != "step-00000006":
            problems.append(f"latest(root) after three published saves: got {got}, expected step-00000006")
        rows.append(_row("world 2: saves of steps 2, 4, 6", got, problems))
        err = ""
        try:
            course_dist.launch(_save_rank, 2, args=(publish, str(killed), 6), **kw)
        except Exception as e:  # noqa: BLE001 - the killed rank's RankError is the expected outcome
            err = type(e).__name__
        got = latest(killed)
        problems = [] if err else ["the launch did not fail although rank 1 was killed mid-save"]
        if (killed / "step-00000006").exists():
            problems.append("step-00000006 was published although rank 1 died before its write finished")
        if got is None or Path(got).name != "step-00000004":
            problems.append(f"latest(root) after the interrupted save: got {got}, expected step-00000004")
        rows.append(_row("world 2: rank 1 killed mid-save of step 6", got, problems, err))
        want = out[0]["params"][6]
        for w in resume_worlds:
            problems, diff = [], float("nan")
            if got is None:
                problems.append("nothing to resume from")
            else:
                start = int(Path(got).name.split("-")[1])
                res = course_dist.launch(_resume_rank, w, args=(str(got), start, 6), **kw)
                diff = max(float((p - want).abs().max()) for p in res)
                if not diff <= RESUME_TOL:
                    problems.append(f"resumed from {Path(got).name} at world {w}: parameters after step 6 "
                                    f"differ from the uninterrupted world-2 run by {diff:.3g} "
                                    f"(want <= {RESUME_TOL})")
            rows.append(_row(f"resume at world {w} from latest(root)", got, problems, diff=diff))
    return pd.DataFrame(rows)


def layout(root: Path, entries: dict[str, bool]) -> Path:
    """Make ``root`` with one directory per entry (name -> holds ``.metadata``), each with a rank file."""
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    for name, complete in entries.items():
        (root / name).mkdir()
        (root / name / "__0_0.distcp").write_bytes(b"x")
        if complete:
            (root / name / ".metadata").write_bytes(b"m")
    return root
