"""Drills that need a process group or a trainer's logs, packaged so a notebook cell stays a few lines.

- :func:`ddp_check` - world 2 (``course_dist.launch``): the package's ``wrap_model`` + ``train_step`` on a
  fixed workload with SGD, against torch's own one-process SGD on the whole global batch; counts the
  gradient all-reduces of every step (a counting DDP comm hook: without ``no_sync`` every micro-batch
  all-reduces).
- :func:`two_phase_check` - world 2: the package's ``save_checkpoint`` publishes one checkpoint holding both
  ranks' files (digests reported by each rank), then the same checkpoint with a rank file gone must not
  verify, not be chosen, not load.
- :func:`resume_choice_check` - world 2: rank 1 is made to see no checkpoint; ``resume`` must still continue
  from rank 0's choice on both ranks.
- :func:`sigterm_drill` - SIGTERM to a live job's whole session once it logged a step (held there: no race
  with the job's end).
- :func:`recovery_parts` / :func:`scaling_from_logs` - numbers recomputed from the metrics logs.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd

from course_dist import _budget

from .adapter import package_root
from .procs import SMALL, budget, start_trainer, stop_tree, wait_for_step


def _import(name: str, root: str) -> ModuleType:
    """The graded package inside a rank (first on sys.path, as in the kernel)."""
    import importlib

    if root in sys.path:
        sys.path.remove(root)
    sys.path.insert(0, root)
    return importlib.import_module(name)


def _ddp_rank(
    name: str, root: str, micro: int, accum: int, steps: int, lr: float, seed: int
) -> dict[str, Any]:
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

    import course_dist

    hw = _import(name, root)
    rank, world = dist.get_rank(), dist.get_world_size()
    cfg = hw.TrainConfig(
        **{k: SMALL[k] for k in ("in_dim", "hidden", "depth")}, seed=seed, optimizer="sgd", lr=lr
    )
    data = hw.SyntheticDataset(256, cfg.in_dim, cfg.classes, cfg.data_seed, "v1", "drill")
    model = hw.ddp.wrap_model(hw.build_model(cfg), world, course_dist.device())
    calls = [0]

    def counting(state, bucket):  # noqa: ANN001, ANN202 - DDP inspects the annotations: keep none
        calls[0] += 1
        return allreduce_hook(state, bucket)

    model.register_comm_hook(None, counting)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)  # constant: the schedule is checked apart
    oracle = hw.build_model(cfg)  # torch alone: one process, the whole global batch, plain SGD
    oracle_opt = torch.optim.SGD(oracle.parameters(), lr=lr)
    g = torch.Generator().manual_seed(seed)
    gb = micro * accum * world
    ratios, losses, oracle_losses = [], [], []
    # all-reduces of one plain synchronised backward: the buckets a step must cost, whatever the bucket size
    x, y = data.batch(list(range(micro)))
    calls[0] = 0
    F.cross_entropy(model(x), y).backward()
    per_backward = max(1, calls[0])
    model.zero_grad(set_to_none=True)
    for _ in range(steps):
        order = torch.randperm(len(data), generator=g)[:gb].tolist()
        share = order[rank * gb // world : (rank + 1) * gb // world]
        mbs = [share[i * micro : (i + 1) * micro] for i in range(accum)]
        calls[0] = 0
        stats = hw.ddp.train_step(model, opt, sched, data, mbs, course_dist.device())
        ratios.append(calls[0] / per_backward)
        t = torch.tensor([float(stats.loss)], dtype=torch.float64)
        dist.all_reduce(t)
        losses.append(float(t) / world)
        oracle_opt.zero_grad(set_to_none=True)
        xo, yo = data.batch(order)
        lo = F.cross_entropy(oracle(xo), yo)
        lo.backward()
        oracle_opt.step()
        oracle_losses.append(lo.item())
    inner = model.module if hasattr(model, "module") else model
    diff = max(
        float((a.detach() - b.detach()).abs().max())
        for a, b in zip(inner.parameters(), oracle.parameters(), strict=True)
    )
    from .results import fingerprint

    return {
        "allreduces_per_step": ratios,
        "losses": losses,
        "oracle_losses": oracle_losses,
        "max_param_diff": diff,
        "params": fingerprint(inner.state_dict()),
        "oracle_params": fingerprint(oracle.state_dict()),
    }


def ddp_check(
    pkg: ModuleType, micro: int = 8, accum: int = 2, steps: int = 3, lr: float = 0.5, seed: int = 0
) -> dict[str, Any]:
    """Rank 0's result of :func:`_ddp_rank` at world 2 (one launch)."""
    import course_dist

    res = course_dist.launch(
        _ddp_rank, 2, args=(pkg.__name__, str(package_root(pkg)), micro, accum, steps, lr, seed), timeout=120
    )
    return res[0]


def _two_phase_rank(name: str, root_dir: str, ckpt: str, step: int) -> dict[str, Any]:
    import torch
    import torch.distributed as dist

    hw = _import(name, root_dir)
    rank, world = dist.get_rank(), dist.get_world_size()

    def gather(obj: Any) -> list[Any]:
        out: list[Any] = [None] * world
        dist.all_gather_object(out, obj)
        return out

    shared = {"step": step, "w": torch.arange(4.0)} if rank == 0 else None
    local = {"step": step, "rank": rank, "rng": torch.full((3,), float(rank))}
    path = hw.save_checkpoint(ckpt, step, shared, local, rank, world, keep_last=2, gather=gather)
    dist.barrier()
    _, mine = hw.load_checkpoint(path, rank)
    return {"path": str(path), "own_rank_back": int(mine["rank"])}


def two_phase_check(pkg: ModuleType, root: str | Path, step: int = 7) -> dict[str, Any]:
    """Save at world 2 through the package, then damage a copy: facts about what verifies and loads."""
    import course_dist

    root = Path(root)
    ckpt = root / "ckpt"
    res = course_dist.launch(
        _two_phase_rank, 2, args=(pkg.__name__, str(package_root(pkg)), str(ckpt), step), timeout=120
    )
    path = Path(res[0]["path"])
    manifest = json.loads((path / "manifest.json").read_text())
    out: dict[str, Any] = {
        "published": path.name,
        "same_path_on_both": res[0]["path"] == res[1]["path"],
        "manifest_world_size": manifest.get("world_size"),
        "manifest_files": sorted(manifest.get("files", {})),
        "each_rank_loads_its_own": [r["own_rank_back"] for r in res],
        "verifies": bool(pkg.verify_checkpoint(path)),
    }
    # the same checkpoint, one step later, with rank 1's file never arrived and the manifest not naming it
    torn = ckpt / f"step-{step + 1:08d}"
    shutil.copytree(path, torn)
    (torn / "rank-00001.pt").unlink()
    m = json.loads((torn / "manifest.json").read_text())
    m["files"].pop("rank-00001.pt", None)
    m["step"] = step + 1
    (torn / "manifest.json").write_text(json.dumps(m))
    out["torn_verifies"] = bool(pkg.verify_checkpoint(torn))
    latest = pkg.latest_checkpoint(ckpt)
    out["latest_with_torn"] = None if latest is None else Path(latest).name
    try:
        pkg.load_checkpoint(torn, 1)
        out["torn_loads_for_rank1"] = True
    except Exception:  # noqa: BLE001 - any refusal counts; what matters is that it does not load
        out["torn_loads_for_rank1"] = False
    return out


def _choice_rank(name: str, root_dir: str, run_dir: str, overrides: dict[str, Any]) -> dict[str, Any]:
    import torch.distributed as dist

    hw = _import(name, root_dir)
    rank = dist.get_rank()
    if rank == 1:  # rank 1's view of the shared filesystem lags: it sees no checkpoint at all
        for mod in (hw, hw.checkpoint, hw.trainer):
            if hasattr(mod, "latest_checkpoint"):
                mod.latest_checkpoint = lambda root: None
    cfg = hw.TrainConfig(run_dir=run_dir, **{**SMALL, **overrides})
    info = hw.distributed.init_distributed("gloo")
    run = hw.trainer.setup(cfg, info)
    got = hw.trainer.resume(run)
    run.metrics.close()
    return {"resumed_from": got, "step": run.step}


def resume_choice_check(
    pkg: ModuleType, run_dir: str | Path, overrides: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Per rank: what ``resume`` continued from when rank 1 cannot see any checkpoint (run_dir has one)."""
    import course_dist

    return list(
        course_dist.launch(
            _choice_rank,
            2,
            args=(pkg.__name__, str(package_root(pkg)), str(run_dir), dict(overrides or {})),
            timeout=120,
        )
    )


#: seconds every rank sleeps before each step after ``at_step`` (a ``slow`` fault): the signal must land while
#: the job runs, but the poller sending it is one process among many on a loaded box and the 12+ steps left
#: took well under a second; 12 x 1 s leave it 12 s, and the job pays about one (it stops a step later)
HOLD_S = 1.0
#: torchrun's default SIGTERM -> SIGKILL grace for its workers (``--shutdown-timeout``), seconds
SHUTDOWN_GRACE_S = 30.0


def sigterm_drill(
    pkg: ModuleType,
    run_dir: str | Path,
    args: list[str],
    nproc: int = 2,
    at_step: int = 3,
    env: dict | None = None,
) -> dict[str, Any]:
    """Start a job, SIGTERM its whole session once rank 0 logged ``at_step`` (held there by :data:`HOLD_S`:
    the trainer's handler runs during the sleep); the waits are cut to what the graded cell has left."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    log = run_dir.parent / f"{run_dir.name}-sigterm.log"
    plan = [(env or {}).get("COURSE_FAULTS", ""), *(f"slow:{r}@{at_step}:{HOLD_S}" for r in range(nproc))]
    env = {**(env or {}), "COURSE_FAULTS": ",".join(x for x in plan if x)}
    p = start_trainer(pkg, ["--run-dir", str(run_dir), *args], nproc=nproc, log_path=log, env=env)
    rc: int | None = None
    try:
        reached = wait_for_step(run_dir, at_step, timeout=budget(180.0)[0], p=p)
        if reached:  # p is not reaped yet (wait_for_step saw it running): its group still exists
            os.killpg(p.pid, signal.SIGTERM)
            # torchrun SIGKILLs its workers its grace after the signal, then exits: waiting longer cannot help
            try:
                rc = p.wait(timeout=budget(SHUTDOWN_GRACE_S + _budget.MARGIN_S)[0])
            except subprocess.TimeoutExpired:
                rc = None
    finally:
        stop_tree(p)
    out = log.read_text(errors="replace")
    assert reached, f"the job never logged step {at_step} (exit {p.returncode}):\n{out[-3000:]}"
    assert rc is not None, f"the job did not exit within {SHUTDOWN_GRACE_S:.0f} s of SIGTERM:\n{out[-3000:]}"
    return {"returncode": rc, "output": out}


def recovery_parts(run_dir: str | Path) -> dict[str, float]:
    """SIGKILL -> first resumed step, and its parts, from the metrics of a run restarted once (attempts 0, 1).

    ``restart`` = last step of attempt 0 -> the new process exists (torchrun notices the death, stops the
    others, starts the new workers); ``imports`` -> the trainer's entry; ``rendezvous`` -> every rank joined
    the group (a barrier); ``setup`` -> data, model, DDP (its parameter broadcast); ``load`` -> the checkpoint
    is chosen, read and restored; ``first_step`` -> the first resumed step is logged."""
    from .results import load_jsonl

    recs = load_jsonl(run_dir, rank=0)
    steps0 = [r["time"] for r in recs if r.get("event") == "step" and r.get("attempt") == 0]
    start1 = next(r for r in recs if r.get("event") == "start" and r.get("attempt") == 1)
    step1 = min(r["time"] for r in recs if r.get("event") == "step" and r.get("attempt") == 1)
    boot = start1.get("boot") or {}
    t_last = max(steps0)
    parts = {"total": step1 - t_last}
    if all(k in boot for k in ("process", "enter", "group", "setup", "loaded")):
        parts.update(
            restart=boot["process"] - t_last,
            imports=boot["enter"] - boot["process"],
            rendezvous=boot["group"] - boot["enter"],
            setup=boot["setup"] - boot["group"],
            load=boot["loaded"] - boot["setup"],
            first_step=step1 - boot["loaded"],
        )
    return parts


def scaling_from_logs(out_dir: str | Path, skip: int) -> pd.DataFrame:
    """The scaling table recomputed from the runs' own metrics logs (world, global_batch, step_s,
    samples_per_s): per step the slowest rank's time, the median over steps after ``skip``."""
    rows = []
    for run_dir in sorted(Path(out_dir).glob("world*-*")):
        from .results import load_jsonl

        recs = [
            r
            for rank_file in sorted((run_dir / "metrics").glob("rank-*.jsonl"))
            for r in load_jsonl(run_dir, path=rank_file)
        ]
        steps = pd.DataFrame([r for r in recs if r.get("event") == "step"])
        if steps.empty:
            continue
        steps = steps[steps["step"] > skip]
        per_step = steps.groupby("step").agg(step_s=("step_s", "max"), samples=("samples", "sum"))
        step_s = float(per_step["step_s"].median())
        gb = int(per_step["samples"].iloc[0])
        rows.append(
            {
                "world": int(steps["world_size"].iloc[0]),
                "global_batch": gb,
                "step_s": step_s,
                "samples_per_s": gb / step_s,
            }
        )
    return pd.DataFrame(rows).sort_values("world").reset_index(drop=True)
