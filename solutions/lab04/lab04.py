# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Lab 04 - Distributed checkpoints and fault-tolerant restarts
#
# **Thesis.** *A checkpoint is correct when the step after a restart is the step the job would have taken anyway*
# (next-step equivalence). Three things protect that property: **complete state** (everything the next step reads:
# weights, optimizer moments, LR schedule, data position, every RNG of every rank), **atomic publication** (a
# reader sees a whole checkpoint or none, even if the writer is SIGKILLed between two bytes), and **rehearsed
# recovery** (the restart path is run on purpose, measured, and compared bitwise with a run that never failed).
#
# The course's opening complaint was "an eight-GPU job loses progress on failure". Here you make the loss bounded
# and measured: you will capture state (1), publish it atomically (2) from every rank with a two-phase commit (3),
# resume at a different world size without losing or repeating a sample (4), survive a SIGKILLed rank under a
# supervisor (5), and choose the checkpoint interval from measured cost and failure rate (6).
#
# Everything runs in real processes: `course_dist.launch(fn, world_size=2)` starts a real gloo process group (NCCL
# on a GPU node, same code: tensors live on `course_dist.device()`, loads use `map_location`), `course_dist.step(i)`
# applies a fault plan (`Fault("kill", rank=1, step=5)` SIGKILLs rank 1 there). The lab's trainer
# (`lab04.Trainer`) uses dropout, numpy input jitter, a python-random input scale, AdamW and a cosine schedule, so
# forgetting any piece of state changes the very next step.
#
# Stuck? `hint("lab04.<exercise>")` shows the next of three hints. Grading runs with `COURSE_FAST=1` (smaller sizes
# via `pick(full=..., fast=...)`).

# %%
import copy
import hashlib
import io
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
import torch.distributed as dist
from IPython.display import display

import course_dist
from course_dist import Fault, LaunchTimeout, RankError, hint, pick
from course_dist.labkit import lab04, lab04_dcp, lab04_drills, lab04_elastic, lab04_sim
from course_dist.labkit.lab04_crash import MANIFEST, Loaded
from course_dist.labkit.lab04_elastic import RecoveryReport

pd.set_option("display.precision", 4)
# The lab's models are tiny: extra intra-op threads only add synchronisation (measured: 4 ms vs 130 ms per step on
# a busy 2-core machine), and a single-threaded parent is also what makes forked checkpoint writers safe.
torch.set_num_threads(1)
WORK = Path(tempfile.mkdtemp(prefix="lab04-"))  # every checkpoint of this notebook lives here; removed at the end
CFG = lab04.Config()
print("fast mode:", course_dist.fast_mode(), "| config", CFG.digest(), "| work dir", WORK)

# %% [markdown]
# ## Exercise 1 - Complete state
#
# A checkpoint that holds only `model.state_dict()` restarts a *different* run: AdamW's moments restart at zero,
# the cosine schedule restarts at its peak, the data loader replays the epoch from sample 0, and dropout masks,
# jitter and scale come from whatever the RNGs hold in the new process. Next-step equivalence needs all of it:
#
# | piece | where it lives in `lab04.Trainer` | what breaks without it |
# |---|---|---|
# | weights, optimizer, scheduler | `tr.model`, `tr.optimizer`, `tr.scheduler` | moments and LR differ |
# | position | `tr.step`, `tr.epoch`, `tr.consumed` (samples of this epoch, all ranks) | data replayed or skipped |
# | RNGs, per rank | `random`, `numpy.random`, `torch` CPU, CUDA where present | dropout, jitter, scale differ |
# | config + its hash | `tr.cfg`, `tr.cfg.digest()` | resuming a run under another config |
#
# Write `capture_state` (a *snapshot*: training on afterwards must not change it; it must survive
# `torch.save`/`torch.load`) and `restore_state` (into a freshly built trainer; refuse a checkpoint whose config
# hash differs with a `ValueError` naming both hashes; leave `state` untouched, so it can be restored twice). The test trains k steps, captures, serialises, restores into
# a fresh trainer whose RNGs were scrambled, and demands that steps k+1 ... k+m are **bitwise** equal to the run
# that never stopped.

# %%
hint("lab04.state")


# %% nbgrader={"grade": false, "grade_id": "state_solution", "locked": false, "schema_version": 3, "solution": true}
def capture_state(tr: lab04.Trainer) -> dict[str, Any]:
    """Everything this rank's next training step depends on, as a snapshot (copies, not references).

    Includes model, optimizer, scheduler, step/epoch/consumed, the python, numpy, torch-CPU and (if available)
    CUDA RNG states, the config and its hash. The result must survive ``lab04.roundtrip`` (torch.save/load).
    """
    ### BEGIN SOLUTION
    state = {
        "model": tr.model.state_dict(),
        "optimizer": tr.optimizer.state_dict(),
        "scheduler": tr.scheduler.state_dict(),
        "position": {"step": tr.step, "epoch": tr.epoch, "consumed": tr.consumed},
        # RNGs are per process, so per rank: every rank saves its own (exercise 3 writes one file per rank)
        "rng": {
            "python": random.getstate(),
            "numpy": np.random.get_state(),
            "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
        },
        "config": tr.cfg.to_dict(),
        "config_hash": tr.cfg.digest(),
        "rank": tr.rank,
        "world_size": tr.world_size,
    }
    # state_dict() returns references to live tensors: copy, or the next optimizer step rewrites the snapshot
    return copy.deepcopy(state)
    ### END SOLUTION


def restore_state(tr: lab04.Trainer, state: dict[str, Any]) -> None:
    """Load ``state`` into the freshly built ``tr`` so that its next step is the one the saved run would take.

    Raises ValueError naming both hashes if ``state`` was captured under a different config. ``state`` itself
    must stay untouched: restoring it again later must give the same run.
    """
    ### BEGIN SOLUTION
    # optimizer.load_state_dict keeps references to the tensors it is given and AdamW updates them in place:
    # without a copy, training the restored trainer would rewrite ``state``
    state = copy.deepcopy(state)
    if state["config_hash"] != tr.cfg.digest():
        raise ValueError(f"checkpoint was written under config {state['config_hash']}, this run's config is "
                         f"{tr.cfg.digest()}: refusing to mix runs (start fresh or restore the old config)")
    tr.model.load_state_dict(state["model"])
    tr.optimizer.load_state_dict(state["optimizer"])  # moves the moments to the parameters' device
    tr.scheduler.load_state_dict(state["scheduler"])
    pos = state["position"]
    tr.step, tr.epoch, tr.consumed = pos["step"], pos["epoch"], pos["consumed"]
    rng = state["rng"]  # last: building the trainer above consumed randomness
    random.setstate(rng["python"])
    np.random.set_state(rng["numpy"])
    torch.set_rng_state(rng["torch"])
    if rng["cuda"] is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(rng["cuda"])
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "state_tests", "locked": true, "points": 16, "schema_version": 3, "solution": false}
m = pick(full=10, fast=6)
rep = lab04.check_resume(capture_state, restore_state, CFG, k=5, m=m)
assert rep.ok, f"resume at step 5: {rep.detail}"
snap_tr = lab04.Trainer(CFG)
for _ in range(3):
    snap_tr.train_step()
snap = capture_state(snap_tr)
snap_tr.train_step()  # training on must not change the snapshot
after = lab04.roundtrip(snap)
fresh = lab04.Trainer(CFG)
restore_state(fresh, after)
assert fresh.step == 3, f"restored step {fresh.step}, expected 3: the snapshot changed after it was taken"
other = lab04.Trainer(replace(CFG, lr=1e-3))
try:
    restore_state(other, lab04.roundtrip(capture_state(lab04.Trainer(CFG))))
    raise AssertionError("restoring a checkpoint of another config must raise ValueError")
except ValueError as exc:
    assert CFG.digest() in str(exc) and other.cfg.digest() in str(exc), f"name both hashes: {exc}"
print("exercise 1:", rep.detail, "over", m, "steps")
### BEGIN HIDDEN TESTS
for k in (0, 9):  # at the very start, and across an epoch boundary (8 steps per epoch)
    r = lab04.check_resume(capture_state, restore_state, CFG, k=k, m=4)
    assert r.ok, f"resume at step {k}: {r.detail}"
base = lab04.uninterrupted(CFG, 6)  # (trains a trainer: touches the global RNGs, so before the restore)
fresh2 = lab04.Trainer(CFG)
restore_state(fresh2, after)  # the snapshot taken at step 3, restored again, must continue like the original
got = [fresh2.train_step() for _ in range(3)]
assert got == base.losses[3:], f"snapshot at step 3 continued with {got}, expected {base.losses[3:]}"
per_rank = course_dist.launch(lab04.check_resume, 2, args=(capture_state, restore_state, CFG, 4, 3), stream=False)
assert all(r.ok for r in per_rank), [r.detail for r in per_rank]
### END HIDDEN TESTS

# %% [markdown]
# What each piece is worth, measured: leave one out and see where the resumed run first differs.

# %%
FRESH_SCHEDULER = lab04.Trainer(CFG).scheduler.state_dict()  # what a scheduler built in a new process holds
FORGET = {  # undo one piece after a correct restore: what a checkpoint without it would leave behind
    "python RNG": lambda tr: random.seed(0),
    "numpy RNG": lambda tr: np.random.seed(0),
    "torch RNG": lambda tr: torch.manual_seed(0),
    "scheduler": lambda tr: tr.scheduler.load_state_dict(FRESH_SCHEDULER),
    "data position": lambda tr: (setattr(tr, "epoch", 0), setattr(tr, "consumed", 0)),
}


def restore_without(piece: str):
    def restore(tr, state):
        restore_state(tr, state)
        FORGET[piece](tr)
    return restore


ablation = pd.DataFrame([
    {"left out": piece, "first differing step": r.first_bad_step, "detail": r.detail}
    for piece in FORGET
    for r in [lab04.check_resume(capture_state, restore_without(piece), CFG, 5, 4)]])
display(ablation)

# %% [markdown]
# ## Exercise 2 - Atomic publication
#
# A save takes time; a crash (OOM kill, node loss, preemption) can land between any two bytes. The rule: **a reader
# sees a complete checkpoint or none.** The protocol (the tests check each rule on the recorded file operations):
#
# 1. serialise each part (`torch.save` into `io.BytesIO`) and write it as `<name>.pt` into a temporary directory
#    `root/.tmp-step-XXXXXXXX` (never into the final directory); `flush` + `os.fsync` each file;
# 2. write `manifest.json` **last**: `{"step": s, "files": {"<name>.pt": {"bytes": n, "sha256": hex}}}`, fsync it,
#    fsync the temporary directory (its entries), then `os.replace` it to `root/step-XXXXXXXX` (8 digits) and fsync
#    `root` (the new name);
# 3. point `root/latest` at it: write `.latest.tmp` (fsynced), `os.replace` it onto `latest`, fsync `root`;
# 4. keep the newest `keep` step directories (move an old one out of the `step-` namespace, then delete it).
#
# `load_checkpoint` does not trust names or `latest`: it walks `step-*` directories newest first, verifies every
# file's size and sha256 against the manifest, returns the first complete one as `Loaded(step, path, parts,
# skipped)` and records in `skipped` *why* it passed over each newer one; no complete checkpoint at all is a
# `FileNotFoundError`. The drill then SIGKILLs a real writer process before every one of its file operations (a
# `write` is cut in half first), and damages published checkpoints (bit flip, truncation, lost manifest).

# %%
hint("lab04.atomic")


# %% nbgrader={"grade": false, "grade_id": "atomic_solution", "locked": false, "schema_version": 3, "solution": true}
def save_checkpoint(root: str | os.PathLike, step: int, parts: dict[str, Any], *, keep: int = 3) -> Path:
    """Publish ``parts`` (name -> picklable object) atomically as ``root/step-<step:08d>``; return that path.

    Protocol: temp dir, fsynced files, manifest with sha256 last, fsync dir, rename, fsync root, atomic
    ``latest``, keep the newest ``keep``.
    """
    ### BEGIN SOLUTION
    from concurrent.futures import ThreadPoolExecutor

    class Hashed:
        """A file-like ``torch.save`` target: writes the bytes and hashes them on a helper thread (no re-read).

        sha256 (~0.7 GB/s here) is slower than copying into the page cache, so each big record is copied (10+
        GB/s; torch may reuse the buffer once ``write`` returns) and hashed in the background, overlapping the
        rest of the serialisation and the fsync (the disk wait). At most ``limit`` bytes wait to be hashed."""

        def __init__(self, f: Any, pool: ThreadPoolExecutor | None, limit: int = 64 << 20) -> None:
            self.f, self.pool, self.digest, self.size, self.limit = f, pool, hashlib.sha256(), 0, limit
            self.pending: list[tuple[Any, int]] = []  # (future, bytes) in submission order

        def write(self, data: Any) -> int:
            self.size += len(data)
            if self.pool is None or (len(data) < 1 << 20 and not self.pending):  # small: hash right here
                self.digest.update(data)
            else:  # one worker thread runs the updates in submission order, so the digest is the file's
                self.pending.append((self.pool.submit(self.digest.update, bytes(data)), len(data)))
                while sum(n for _, n in self.pending) > self.limit:
                    self.pending.pop(0)[0].result()
            return self.f.write(data)

        def flush(self) -> None:
            self.f.flush()

        def hexdigest(self) -> str:
            for future, _ in self.pending:
                future.result()
            return self.digest.hexdigest()

    def durable(path: Path, fill: Any, pool: ThreadPoolExecutor | None = None) -> Hashed:
        with open(path, "wb") as f:
            out = Hashed(f, pool)
            fill(out)
            f.flush()
            os.fsync(f.fileno())  # data on disk before anything can point at it (the hashing goes on meanwhile)
        return out

    def fsync_dir(path: Path) -> None:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)  # makes the directory's entries (new names) durable
        finally:
            os.close(fd)

    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    final, tmp = root / f"step-{step:08d}", root / f".tmp-step-{step:08d}"
    if tmp.exists():
        shutil.rmtree(tmp)  # debris of an earlier crashed save of this step
    tmp.mkdir()
    files = {}
    # torch.save streams straight into the file: serialising into a BytesIO first costs one more copy of the
    # state (and its regrowth). Every file operation stays on this thread, so their order is fixed.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ckpt-sha256") as pool:
        for name, obj in parts.items():
            files[f"{name}.pt"] = durable(tmp / f"{name}.pt", lambda out, obj=obj: torch.save(obj, out), pool)
        files = {name: {"bytes": out.size, "sha256": out.hexdigest()} for name, out in files.items()}
        # the manifest is the commit record: written last, it lists what a complete checkpoint holds
        manifest = json.dumps({"step": step, "files": files}, indent=1).encode()
        durable(tmp / MANIFEST, lambda out: out.write(manifest))
    fsync_dir(tmp)
    if final.exists():  # re-saving a step after a restart: retire the old one out of the step- namespace
        os.replace(final, root / f".trash-{final.name}")
        shutil.rmtree(root / f".trash-{final.name}")
    os.replace(tmp, final)  # atomic: readers see no directory or the whole one
    fsync_dir(root)
    durable(root / ".latest.tmp", lambda out: out.write(final.name.encode()))
    os.replace(root / ".latest.tmp", root / "latest")  # only ever names a published checkpoint
    fsync_dir(root)
    published = sorted(d for d in root.iterdir() if d.is_dir() and d.name.startswith("step-"))
    for old in published[:-keep]:
        trash = root / f".trash-{old.name}"
        os.replace(old, trash)  # a crash mid-delete leaves debris, never a half-deleted step directory
        shutil.rmtree(trash)
    return final
    ### END SOLUTION


def load_checkpoint(root: str | os.PathLike, map_location: Any = "cpu") -> Loaded:
    """The newest ``root/step-*`` whose manifest verifies (sizes and sha256) as ``Loaded``; ``skipped`` maps
    each newer directory name to the reason it was skipped. FileNotFoundError (with reasons) if none does."""
    ### BEGIN SOLUTION
    def problem(d: Path) -> str | None:
        try:
            files = json.loads((d / MANIFEST).read_text())["files"]
        except FileNotFoundError:
            return "no manifest (an interrupted or foreign save)"
        except (ValueError, KeyError, TypeError) as exc:
            return f"unreadable manifest ({exc})"
        for name, meta in files.items():
            p = d / name
            if not p.is_file():
                return f"{name} is missing"
            data = p.read_bytes()
            if len(data) != meta["bytes"]:
                return f"{name} has {len(data)} bytes, the manifest says {meta['bytes']} (truncated)"
            if hashlib.sha256(data).hexdigest() != meta["sha256"]:
                return f"{name} fails its sha256 check (corrupted)"
        return None

    root = Path(root)
    skipped: dict[str, str] = {}
    found = [d for d in root.iterdir() if d.is_dir() and d.name.startswith("step-")] if root.is_dir() else []
    candidates = sorted(found, reverse=True)  # newest first: 8-digit step numbers sort as strings
    for d in candidates:
        why = problem(d)
        if why is not None:
            skipped[d.name] = why
            continue
        files = json.loads((d / MANIFEST).read_text())["files"]
        # weights_only=False is acceptable only because we wrote these bytes and just verified their checksums
        parts = {n.removesuffix(".pt"): torch.load(d / n, map_location=map_location, weights_only=False)
                 for n in files}
        return Loaded(int(d.name.split("-")[1]), d, parts, skipped)
    raise FileNotFoundError(f"no complete checkpoint under {root}; skipped: {skipped or 'nothing found'}")
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "atomic_tests", "locked": true, "points": 18, "schema_version": 3, "solution": false}
drill = lab04_drills.kill_drill(save_checkpoint, load_checkpoint)
display(drill.groupby(["op", "loaded_step"], dropna=False).size().rename("kill points").reset_index())
assert not drill.attrs["protocol"], "protocol rules broken:\n" + "\n".join(drill.attrs["protocol"])
bad = drill[drill["problems"] != ""]
assert bad.empty, f"{len(bad)} of {len(drill)} kill points left a bad state:\n{bad.to_string()}"
damage = lab04_drills.corruption_drill(save_checkpoint, load_checkpoint)
display(damage)
bad = damage[damage["problem"] != ""]
assert bad.empty, bad.to_string()
print(f"exercise 2: {len(drill) - 1} kill points and {len(damage)} damage cases, all recovered")
### BEGIN HIDDEN TESTS
for keep in (1, 2, 3):
    problems = lab04_drills.keep_drill(save_checkpoint, keep=keep, steps=4)
    assert not problems, f"keep={keep}: {problems}"
with tempfile.TemporaryDirectory() as empty:
    try:
        load_checkpoint(empty)
        raise AssertionError("an empty root must raise FileNotFoundError")
    except FileNotFoundError:
        pass
### END HIDDEN TESTS

# %% [markdown]
# The operations one save performs, in order (each row was a kill point above):

# %%
display(drill.attrs["ops"].drop(columns="n").T)

# %% [markdown]
# ## Exercise 3 - Distributed save: a two-phase commit
#
# With many ranks, each writes **its own** part - its RNG states, its data position, its optimizer shard when
# sharded - and nobody may publish until **everyone** has written. That is a two-phase commit:
#
# 1. rank 0 creates the shared staging directory `root/.tmp-step-XXXXXXXX`; a barrier;
# 2. every rank writes `rank{r:02d}-<name>.pt` for its `parts` (rank 0 also `shared-<name>.pt` for `shared`, e.g.
#    the replicated model), each fsynced, and **reports** `{file: {"bytes", "sha256"}}` (phase 1: *prepare*);
# 3. the reports are gathered (`dist.all_gather_object`); only if every rank reported does rank 0 write the
#    manifest (`{"step", "world_size", "files"}`), fsync, rename to `root/step-XXXXXXXX`, fsync root and move
#    `latest` (phase 2: *commit*); then it prunes to `keep`;
# 4. a final barrier: no rank returns before the checkpoint is published.
#
# A rank that dies in phase 1 leaves a staging directory and no published step (the survivors' collective fails -
# the launcher reports the dead rank). Do not call `save_checkpoint` here: write files durably again (a few lines).

# %%
hint("lab04.distributed")


# %% nbgrader={"grade": false, "grade_id": "distributed_solution", "locked": false, "schema_version": 3, "solution": true}
def save_distributed(root: str | os.PathLike, step: int, parts: dict[str, Any], *,
                     shared: dict[str, Any] | None = None, keep: int = 3) -> Path:
    """Called on every rank: publish every rank's ``parts`` (and rank 0's ``shared``) as one checkpoint
    ``root/step-<step:08d>`` with a two-phase commit. Returns the published path on every rank."""
    ### BEGIN SOLUTION
    def durable(path: Path, data: bytes | memoryview) -> dict:
        with open(path, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}

    def fsync_dir(path: Path) -> None:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    rank, world = course_dist.rank(), course_dist.world_size()
    root = Path(root)
    final, tmp = root / f"step-{step:08d}", root / f".tmp-step-{step:08d}"
    if rank == 0:
        root.mkdir(parents=True, exist_ok=True)
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir()
    dist.barrier()  # the staging directory exists before anyone writes into it
    mine = {f"rank{rank:02d}-{name}.pt": obj for name, obj in parts.items()}
    mine |= {f"shared-{name}.pt": obj for name, obj in (shared or {}).items()}
    report = {}
    for name, obj in mine.items():
        buf = io.BytesIO()
        torch.save(obj, buf)
        report[name] = durable(tmp / name, buf.getbuffer())
    reports: list[Any] = [None] * world
    dist.all_gather_object(reports, report)  # phase 1 ends: raises here if any rank died before reporting
    if rank == 0:
        files = {name: meta for r in reports for name, meta in r.items()}
        manifest = {"step": step, "world_size": world, "files": files}
        durable(tmp / MANIFEST, json.dumps(manifest, indent=1).encode())
        fsync_dir(tmp)
        if final.exists():
            os.replace(final, root / f".trash-{final.name}")
            shutil.rmtree(root / f".trash-{final.name}")
        os.replace(tmp, final)  # phase 2: commit
        fsync_dir(root)
        durable(root / ".latest.tmp", final.name.encode())
        os.replace(root / ".latest.tmp", root / "latest")
        fsync_dir(root)
        for old in sorted(d for d in root.iterdir() if d.is_dir() and d.name.startswith("step-"))[:-keep]:
            os.replace(old, root / f".trash-{old.name}")
            shutil.rmtree(root / f".trash-{old.name}")
    dist.barrier()  # nobody returns (and maybe trains on, or exits) before the commit
    return final
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "distributed_tests", "locked": true, "points": 12, "schema_version": 3, "solution": false}
dist_drill = lab04_drills.distributed_drill(save_distributed, kill_points=((1, 2),))
display(dist_drill)
bad = dist_drill[dist_drill["problems"] != ""]
assert bad.empty, bad.to_string()
print("exercise 3: two clean saves published, a rank killed mid-save published nothing")
### BEGIN HIDDEN TESTS
hidden_drill = lab04_drills.distributed_drill(save_distributed, kill_points=((0, 2), (1, 3)))
bad = hidden_drill[hidden_drill["problems"] != ""]
assert bad.empty, bad.to_string()
### END HIDDEN TESTS

# %% [markdown]
# **The same idea in torch: `torch.distributed.checkpoint` (DCP).** Below a weight sharded on dim 0 (a DTensor, as
# FSDP2 holds it) is saved at world 2 and loaded at world 3 and world 1. Compare with yours: DCP also writes one
# file per rank (`__<rank>_0.distcp`), its coordinator writes `.metadata` last (tmp + rename: the commit marker, your
# manifest), and - what yours does not do - it *reshards at load time*: each rank of the new world reads just the
# byte ranges of its new shard. What DCP does not give you: checksums, `keep`, a `latest` pointer, RNG or data
# position (torchtitan adds some of these around it). Full mode only: the three launches cost ~10 s here.

# %%
if course_dist.fast_mode():
    print("fast mode: DCP demo skipped (three launches that import torch.distributed.checkpoint: ~10 s)")
else:
    display(lab04_dcp.demo(WORK / "dcp"))

# %% [markdown]
# ## Exercise 4 - Elastic resume: the sample stream continues exactly
#
# After a failure the job may come back with fewer (or more) ranks. The model and optimizer are replicated, so they
# load at any world size; the **data position** is the hard part. `DistributedSampler` deals a whole epoch to a
# fixed world size: resume it at another size and samples are repeated or lost (torchft notes the same problem; the
# default torchtitan dataloader refuses to resume at a different data-parallel degree).
#
# The fix is to save the position *globally* - `consumed` samples of the epoch's permutation, summed over ranks -
# and to partition only the **remaining** indices among the *current* ranks. Write `elastic_batches`: this rank's
# batches for the rest of the epoch. The epoch's global stream is `lab04.epoch_order(n, seed, epoch)` (a
# permutation seeded by `seed + epoch`); drop its first `consumed`, cut the rest into global batches of
# `batch_size` (the last may be shorter: keep it), and give rank `r` its share of each global batch, sizes differing
# by at most one. Every rank must return the same number of batches (a rank with an empty batch still steps: the
# all-reduce needs it). The trainer divides the summed loss by the *global* batch length, so an uneven split still
# yields the exact global mean.

# %%
hint("lab04.elastic")


# %% nbgrader={"grade": false, "grade_id": "elastic_solution", "locked": false, "schema_version": 3, "solution": true}
def elastic_batches(n: int, world_size: int, rank: int, *, seed: int, epoch: int, consumed: int,
                    batch_size: int) -> list[list[int]]:
    """This rank's remaining batches of ``epoch`` after ``consumed`` samples (all ranks together) were
    trained on."""
    ### BEGIN SOLUTION
    rest = lab04.epoch_order(n, seed, epoch)[consumed:]
    # global batches are fixed by the stream alone (not the world size); ranks deal each one out interleaved
    return [rest[i : i + batch_size][rank::world_size] for i in range(0, len(rest), batch_size)]
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "elastic_tests", "locked": true, "points": 12, "schema_version": 3, "solution": false}
bad = lab04_elastic.stream_drill(elastic_batches)
assert bad.empty, bad.to_string()
elastic = lab04_elastic.elastic_drill(elastic_batches)
display(elastic.table)
assert not elastic.problems, elastic.problems
print(f"exercise 4: world 2 -> 1 and 2 -> 3 trained every sample of the epoch exactly once; eval loss within "
      f"{lab04_elastic.ELASTIC_TOL:.0%} of the uninterrupted run")
### BEGIN HIDDEN TESTS
bad = lab04_elastic.stream_drill(elastic_batches, lab04_elastic.HIDDEN_COMBOS)
assert bad.empty, bad.head(10).to_string()
### END HIDDEN TESTS

# %% [markdown]
# Why the loss is close but not bitwise: the global batches are identical, but each rank draws its own dropout
# masks and jitter (seeded by rank and step), so splitting a batch over 3 ranks instead of 2 draws different
# randomness, and the all-reduce sums in a different order. The documented tolerance is
# `lab04_elastic.ELASTIC_TOL` (relative eval loss); the sample accounting, not the loss, is exact.

# %% [markdown]
# ## Exercise 5 - Rehearsed recovery
#
# A recovery path that has never run does not work. Rehearse it: `Fault("kill", rank=1, step=5)` SIGKILLs rank 1
# when it calls `course_dist.step(5)`; the survivor's next collective fails; `course_dist.launch` raises
# `RankError` naming rank 1. Write
#
# - `train_job(cfg, root, steps, every, attempt=0)`, run on every rank: build `lab04.Trainer(cfg)`, resume from the
#   newest simple checkpoint (`lab04.simple_load`; `cfg.stateless_rng=True` derives every RNG from the step, so the
#   simple checkpointer is complete here), then for each step call `course_dist.step(tr.step)` before
#   `tr.train_step()`; rank 0 appends `"<attempt> <step> <time.time()>"` to `root/progress.log` after every step
#   (flushed); save with `lab04.simple_save` every `every` steps. Return `{"start_step": ..., "params":
#   lab04.params_vector(tr.model)}`.
# - `supervise(...)`, the restart loop: launch; on `RankError`/`LaunchTimeout` record the failure and launch again,
#   at most `max_restarts` times (then raise `RuntimeError`). Pass the attempt number to the ranks as
#   `env={"TORCHELASTIC_RESTART_COUNT": str(attempt)}` (a fault with `attempt=0` fires only on the first attempt,
#   as under torchrun) and as `attempt=`. From `lab04_elastic.read_progress(root)` compute, per restart, the
#   **recovery time** (first step completed by the new attempt minus the last step completed by the failed one:
#   kill -> detect -> relaunch -> resume -> first step) and the **lost work** (steps completed by the failed attempt
#   minus the step it resumed from).
#
# The test: the final parameters are **bitwise** equal to a run that never failed (same world size).

# %%
hint("lab04.recovery")


# %% nbgrader={"grade": false, "grade_id": "recovery_solution", "locked": false, "schema_version": 3, "solution": true}
def train_job(cfg: lab04.Config, root: str, steps: int, every: int, attempt: int = 0) -> dict[str, Any]:
    """One rank of one attempt: resume from the newest simple checkpoint in ``root``, train to ``steps``,
    saving every ``every`` steps and logging progress (rank 0)."""
    ### BEGIN SOLUTION
    tr = lab04.Trainer(cfg)
    start = lab04.simple_load(root, tr) or 0  # None on the first attempt: start from scratch
    log = open(Path(root) / "progress.log", "a") if tr.rank == 0 else None  # noqa: SIM115
    try:
        while tr.step < steps:
            course_dist.step(tr.step)  # the fault plan fires here
            tr.train_step()
            if log is not None:
                log.write(f"{attempt} {tr.step} {time.time()}\n")
                log.flush()
            if tr.step % every == 0:
                lab04.simple_save(root, tr)
    finally:
        if log is not None:
            log.close()
    return {"start_step": start, "params": lab04.params_vector(tr.model)}
    ### END SOLUTION


def supervise(cfg: lab04.Config, root: str, steps: int, every: int, *, world_size: int = 2,
              faults: list[Fault] | None = None, max_restarts: int = 2,
              timeout: float = 60.0) -> RecoveryReport:
    """Run ``train_job`` on ``world_size`` ranks, relaunching after a failure (up to ``max_restarts`` times).
    Returns a ``RecoveryReport`` with per-restart recovery time and lost steps."""
    ### BEGIN SOLUTION
    t0 = time.time()
    failures: list[str] = []
    for attempt in range(max_restarts + 1):
        try:
            results = course_dist.launch(train_job, world_size, args=(cfg, root, steps, every),
                                         kwargs={"attempt": attempt}, faults=faults, timeout=timeout,
                                         env={"TORCHELASTIC_RESTART_COUNT": str(attempt)}, stream=False)
            break
        except (RankError, LaunchTimeout) as exc:
            failures.append(f"attempt {attempt}: {type(exc).__name__}: {str(exc).splitlines()[0]}")
    else:
        raise RuntimeError(f"gave up after {max_restarts} restarts: {failures}")
    prog = lab04_elastic.read_progress(root)
    recovery, lost = [], []
    for a in range(attempt):
        failed, nxt = prog[prog["attempt"] == a], prog[prog["attempt"] == a + 1]
        resumed_from = int(nxt["step"].min()) - 1
        lost.append(int(failed["step"].max()) - resumed_from if len(failed) else 0)
        recovery.append(float(nxt["time"].min() - failed["time"].max()) if len(failed) else float("nan"))
    return RecoveryReport(results, attempt + 1, failures, recovery, lost, time.time() - t0)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "recovery_tests", "locked": true, "points": 16, "schema_version": 3, "solution": false}
CFG5 = replace(CFG, stateless_rng=True)
steps5 = pick(full=12, fast=9)
target = lab04_elastic.uninterrupted_world(CFG5, steps5, 2)
root5 = Path(tempfile.mkdtemp(prefix="recovery-", dir=WORK))
report = supervise(CFG5, str(root5), steps5, every=3, faults=[Fault("kill", rank=1, step=5)])
display(pd.DataFrame({"attempts": [report.attempts], "failure": report.failures, "recovery_s": report.recovery_s,
                      "lost_steps": report.lost_steps, "wall_s": [report.wall_s]}))
assert report.restarts == 1, f"expected exactly one restart, got {report.restarts}: {report.failures}"
assert "rank 1" in report.failures[0], report.failures
assert report.results[0]["start_step"] == 3, f"resumed from {report.results[0]['start_step']}, expected 3"
assert report.lost_steps == [2], f"lost steps {report.lost_steps}, expected [2] (killed at step 5, saved at 3)"
assert 0 < report.recovery_s[0] < 60, report.recovery_s
for r, res in enumerate(report.results):
    assert torch.equal(res["params"], target), f"rank {r}: final parameters differ from the uninterrupted run"
print(f"exercise 5: recovered in {report.recovery_s[0]:.2f} s, {report.lost_steps[0]} steps recomputed, final "
      f"parameters bitwise equal to the uninterrupted run")
### BEGIN HIDDEN TESTS
root5b = Path(tempfile.mkdtemp(prefix="recovery_b-", dir=WORK))
rep_b = supervise(CFG5, str(root5b), 8, every=2, faults=[Fault("kill", rank=0, step=7)])
assert rep_b.restarts == 1 and rep_b.lost_steps == [1], (rep_b.restarts, rep_b.lost_steps)
assert rep_b.results[0]["start_step"] == 6
assert torch.equal(rep_b.results[1]["params"], lab04_elastic.uninterrupted_world(CFG5, 8, 2))
root5c = Path(tempfile.mkdtemp(prefix="recovery_c-", dir=WORK))
try:
    supervise(CFG5, str(root5c), 6, every=3, faults=[Fault("raise", rank=1, step=2, attempt=None)],
              max_restarts=1)
    raise AssertionError("a fault on every attempt must exhaust max_restarts and raise RuntimeError")
except RuntimeError as exc:
    assert not isinstance(exc, RankError), f"supervise must raise its own RuntimeError, got {exc!r}"
### END HIDDEN TESTS

# %% [markdown]
# **The same drill under `torchrun`.** torchrun's agent restarts *all* workers after any failure, up to
# `--max-restarts`, with `TORCHELASTIC_RESTART_COUNT` incremented; `course_dist.run` builds the gloo group on a
# per-attempt store prefix (plain `init_process_group` after a restart often fails to connect: see
# `measured.md`). Your `train_job` runs unchanged (pickled by value); the final checkpoint must hold the same
# parameters. (Full mode only: a torchrun job costs ~10 s here.)

# %%
if course_dist.fast_mode():
    print("fast mode: torchrun drill skipped")
else:
    root_tr = Path(tempfile.mkdtemp(prefix="torchrun-", dir=WORK))
    job = lab04_elastic.dump_job(str(WORK / "job.pkl"), train_job, CFG5, str(root_tr), 9, 3)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           "--max-restarts", "1", "-m", "course_dist.run", "course_dist.labkit.lab04_elastic:run_pickled", job]
    t0 = time.time()
    proc = subprocess.run(cmd, env={**os.environ, "COURSE_FAULTS": "kill:1@5", "OMP_NUM_THREADS": "1"},
                          capture_output=True, text=True, timeout=180)
    tr9 = lab04.Trainer(CFG5)
    lab04.simple_load(str(root_tr), tr9)
    prog = lab04_elastic.read_progress(str(root_tr))
    display(pd.DataFrame([{"exit code": proc.returncode, "wall_s": time.time() - t0,
                           "attempts": prog["attempt"].nunique(), "final step": tr9.step,
                           "bitwise equal": torch.equal(lab04.params_vector(tr9.model),
                                                        lab04_elastic.uninterrupted_world(CFG5, 9, 2))}]))
    if proc.returncode:
        print(proc.stderr[-3000:])

# %% [markdown]
# ## Exercise 6 - How often to checkpoint
#
# Each save stalls training for a cost `C`; each failure loses the work since the last checkpoint (on average half
# an interval `T`) plus a restart `R`. With mean time between failures `M`, the fraction of time wasted is, to first
# order, `C/T + (T/2 + R)/M`: frequent saves pay `C` often, rare saves lose more per failure. Young (1974) and
# Daly (2006) minimise it: the interval is about `sqrt(2 C M)`. Write `young_daly_interval` and
# `expected_overhead` (the first-order fraction above); the test compares the model with a simulated failure trace
# (Poisson failures, lost work, restarts), which is exact for its assumptions.

# %%
hint("lab04.interval")


# %% nbgrader={"grade": false, "grade_id": "interval_solution", "locked": false, "schema_version": 3, "solution": true}
def young_daly_interval(cost_s: float, mtbf_s: float) -> float:
    """Seconds of work between checkpoints that minimise the expected overhead (first order)."""
    ### BEGIN SOLUTION
    if cost_s <= 0 or mtbf_s <= 0:
        raise ValueError(f"cost_s and mtbf_s must be > 0, got {cost_s}, {mtbf_s}")
    return math.sqrt(2.0 * cost_s * mtbf_s)
    ### END SOLUTION


def expected_overhead(interval_s: float, cost_s: float, mtbf_s: float, restart_s: float = 0.0) -> float:
    """First-order expected overhead (a fraction of the useful work) of checkpointing every ``interval_s``."""
    ### BEGIN SOLUTION
    return cost_s / interval_s + (interval_s / 2.0 + restart_s) / mtbf_s
    ### END SOLUTION


# %% [markdown]
# Measure the inputs on this machine: the stall of a synchronous durable save and of an asynchronous one (copy
# the state to CPU memory - the only part training waits for - then write it in a background thread), on a wider
# version of the lab model so the numbers are not all noise. The failure rate is not measurable here: take one
# interruption every 3 hours for the job (Meta's Llama 3 run reported ~466 interruptions in 54 days on 16k GPUs,
# about one every 2.8 hours) and a restart of 60 s.

# %%
CFG6 = replace(CFG, hidden=pick(full=1024, fast=512))
meas = lab04.measure_checkpoint(CFG6, WORK, repeats=pick(full=7, fast=3))
MTBF_S, RESTART_S, KEEP = 3 * 3600.0, 60.0, 3
display(pd.DataFrame([meas]))
intervals = np.geomspace(meas["sync_stall_s"] * 10, MTBF_S, pick(full=25, fast=9))
curve = lab04_sim.overhead_curve(intervals, cost_s=meas["sync_stall_s"], mtbf_s=MTBF_S, restart_s=RESTART_S,
                                 n_traces=pick(full=20, fast=6), work_s=pick(full=100, fast=30) * MTBF_S)
young = young_daly_interval(meas["sync_stall_s"], MTBF_S)
curve["model"] = [expected_overhead(t, meas["sync_stall_s"], MTBF_S, RESTART_S) for t in curve["interval_s"]]
_fig = lab04_sim.plot_overhead(curve, model=curve["model"], young_s=young,
                               title=f"C = {meas['sync_stall_s'] * 1e3:.1f} ms, MTBF = 3 h, restart 60 s")
display(curve)

# %% [markdown]
# **The solution card.** Checkpoint every `young` seconds with the synchronous save. Latency: the training stall
# per save (s). Cost: the expected overhead at that interval (% of work). Capacity: checkpoint bytes per rank.
# Fallback: the worst-case lost work (s) when the *newest* checkpoint turns out corrupt and the loader falls back to
# the previous one: two intervals plus the restart.

# %% nbgrader={"grade": false, "grade_id": "card_solution", "locked": false, "schema_version": 3, "solution": true}
from course_dist.card import Limit, SolutionCard

### BEGIN SOLUTION
card = SolutionCard(
    lab="lab04",
    latency=Limit(meas["sync_stall_s"], "s stall per save",
                  f"synchronous durable save of {meas['bytes_per_rank'] / 1e6:.1f} MB; async staging stalls "
                  f"{meas['async_stall_s']:.4f} s"),
    cost=Limit(100 * expected_overhead(young, meas["sync_stall_s"], MTBF_S, RESTART_S), "% of training time",
               f"every {young:.1f} s (Young/Daly), MTBF 3 h, restart 60 s; storage {KEEP} x bytes/rank"),
    capacity=Limit(float(meas["bytes_per_rank"]), "bytes per rank per checkpoint",
                   "model + AdamW moments + scheduler; RNG and position add < 1 KB per rank"),
    fallback=Limit(2 * young + RESTART_S, "s of work lost at worst",
                   "newest checkpoint corrupt: the loader skips it (checksum), resumes from the one before"),
    justification="Checkpointing every Young/Daly interval balances the stall of each save against the work "
                  "a failure throws away; the simulation agrees with the first-order model near the optimum, "
                  "and a corrupt newest checkpoint costs one extra interval because the loader verifies "
                  "checksums.",
)
### END SOLUTION
card

# %% nbgrader={"grade": true, "grade_id": "interval_tests", "locked": true, "points": 18, "schema_version": 3, "solution": false}
assert math.isclose(young_daly_interval(10, 3600), 268.328157, rel_tol=1e-6), young_daly_interval(10, 3600)
assert math.isclose(young_daly_interval(0.5, 7200), 84.852814, rel_tol=1e-6), young_daly_interval(0.5, 7200)
assert math.isclose(expected_overhead(300, 10, 3600, 30), 10 / 300 + (150 + 30) / 3600, rel_tol=1e-9)
check = lab04_sim.overhead_curve([90, 268.33, 800], cost_s=10, mtbf_s=3600, restart_s=30, n_traces=8,
                                 work_s=50 * 3600)
for t, sim in zip(check["interval_s"], check["overhead"], strict=True):
    model = expected_overhead(t, 10, 3600, 30)
    assert abs(model - sim) <= 0.15 * sim, f"interval {t:.0f} s: model {model:.4f} vs simulated {sim:.4f}"
grid = np.geomspace(30, 3000, 200)
best = grid[np.argmin([expected_overhead(t, 10, 3600, 30) for t in grid])]
assert abs(best - young_daly_interval(10, 3600)) <= 0.03 * best, "the model's minimum must sit at Young/Daly"
y = young_daly_interval(meas["sync_stall_s"], MTBF_S)
course_dist.check_card(card, measured={
    "latency": meas["sync_stall_s"], "capacity": float(meas["bytes_per_rank"]),
    "cost": 100 * expected_overhead(y, meas["sync_stall_s"], MTBF_S, RESTART_S), "fallback": 2 * y + RESTART_S})
print(f"exercise 6: interval {y:.1f} s, overhead {100 * expected_overhead(y, meas['sync_stall_s'], MTBF_S, RESTART_S):.3f} %")
### BEGIN HIDDEN TESTS
for c, mt in [(1, 1), (60, 86400), (0.01, 10), (123.4, 5678.9)]:
    assert math.isclose(young_daly_interval(c, mt), math.sqrt(2 * c * mt), rel_tol=1e-9), (c, mt)
for t, c, mt, r in [(10, 1, 100, 0), (1000, 60, 86400, 120), (5, 0.5, 50, 2)]:
    assert math.isclose(expected_overhead(t, c, mt, r), c / t + (t / 2 + r) / mt, rel_tol=1e-9), (t, c, mt, r)
for bad_args in [(0, 10), (10, 0), (-1, 5)]:
    try:
        young_daly_interval(*bad_args)
        raise AssertionError(f"young_daly_interval{bad_args} must raise ValueError")
    except ValueError:
        pass
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": true, "grade_id": "card_justification", "locked": false, "points": 8, "schema_version": 3, "solution": true}
# **Justification (8 points).** Quote your measured stall per save (sync and async), the interval you chose and the
# overhead it costs. Why does the simulated curve leave the first-order model at long intervals? What would you
# change with an asynchronous save (which cost goes into Young/Daly then?), with a 10x larger model, or with a
# failure rate 10x higher? What does the fallback number assume, and what breaks it (e.g. a bug that silently
# corrupts every checkpoint)?
#
# === BEGIN MARK SCHEME ===
# Full marks: quotes sync vs async stall and the bytes per rank from the table; the Young/Daly interval and its
# overhead (both terms about equal at the optimum); the model is first order (assumes T << M: at T ~ M failures
# during a segment compound, so the simulation rises faster); with async saves only the staging stall enters C
# (interval shrinks ~ sqrt(C)), but the next save must wait for the previous write; C and capacity scale with
# model size, interval ~ sqrt(C M); 10x failure rate -> interval / sqrt(10), overhead x sqrt(10); fallback assumes
# one corrupt checkpoint and keep >= 2 - a systematic corruption (or keep = 1) makes it unbounded, hence checksums
# plus periodic restore drills (exercise 5).
# === END MARK SCHEME ===

# %% [markdown]
# ## Decision
#
# Measured above: the synchronous durable save of the wider lab model stalls training for `meas["sync_stall_s"]`,
# the asynchronous save only for its CPU staging copy; the Young/Daly interval from that cost and a 3-hour MTBF
# keeps the expected overhead well under one percent, and the simulation agrees near the optimum. Recovery from a
# SIGKILLed rank took about a second of relaunch plus the recomputed steps, and the result was bitwise the run that
# never failed. The decision: atomic, verified, per-rank checkpoints at the Young/Daly interval, asynchronous
# writes when the stall matters, `keep >= 2`, and a restart drill in CI.

# %%
summary = pd.DataFrame([
    {"what": "stall per save (sync)", "value": meas["sync_stall_s"], "unit": "s"},
    {"what": "stall per save (async staging)", "value": meas["async_stall_s"], "unit": "s"},
    {"what": "checkpoint interval (Young/Daly)", "value": young, "unit": "s"},
    {"what": "expected overhead", "value": 100 * expected_overhead(young, meas["sync_stall_s"], MTBF_S, RESTART_S),
     "unit": "%"},
    {"what": "recovery time (world 2)", "value": report.recovery_s[0], "unit": "s"},
    {"what": "lost work (kill at 5, saved at 3)", "value": report.lost_steps[0], "unit": "steps"},
])
display(summary)
shutil.rmtree(WORK, ignore_errors=True)
