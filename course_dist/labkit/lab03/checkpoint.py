"""Lab 03 exercise 5: a sharded checkpoint written at one world size and loaded at another.

Both rank functions train the lab model under FSDP2 (applied by the student's ``apply_fsdp2``) and call the
student's ``save_sharded`` / ``load_sharded``; the resumed run's next step is compared with the uninterrupted
run's. DCP writes one file per rank plus ``.metadata`` (the commit marker) and reshards at load time.

A scheduler is in the loop (``ExponentialLR``, halving the learning rate every step), so the optimizer holds a
value that is not a tensor: ``dcp.load`` fills the state dict's tensors in place, and only ``set_state_dict``
puts the loaded learning rate back into the optimizer (issue 34 class 4). The scheduler itself is not saved:
``ExponentialLR`` multiplies whatever learning rate the optimizer holds, so the restored one carries it on.
A loader that lets a checkpoint of another model reach ``dcp.load`` fails there with DCP's
``CheckpointException``; the rank functions turn that into a message naming the missing shape check.

    course_dist.launch(lab03.ckpt_train_save, 2, args=(apply_fsdp2, save_sharded, path, 2))
    course_dist.launch(lab03.ckpt_resume, 3, args=(apply_fsdp2, load_sharded, path, 2))
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch
from torch.distributed.checkpoint.api import CheckpointException

import course_dist
from course_dist.labkit.lab03.harness import BATCH, LR, WD, _loss
from course_dist.labkit.lab03.model import make_model, param_dict, wrap_policy

GAMMA = 0.5  # the scheduler's factor per step: the learning rate of step 2 is LR / 4


def _fsdp2_model(apply_fsdp2: Callable, policy: str, seed: int, size: str) -> tuple[Any, Any, Any]:
    model = make_model(seed, size).to(course_dist.device())
    model = apply_fsdp2(model, wrap_policy(model, policy), True) or model
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WD)
    return model, opt, torch.optim.lr_scheduler.ExponentialLR(opt, gamma=GAMMA)


def _train(model: Any, opt: Any, sched: Any, first: int, last: int, batch: int, seed: int, size: str) -> None:
    for step in range(first, last):
        opt.zero_grad(set_to_none=True)
        _loss(model, step, batch, seed, size).backward()
        opt.step()
        sched.step()


def _dcp_failure(err: CheckpointException, size: str) -> str:
    """What a CheckpointException out of the student's loader means, with DCP's own first line of rank 0's."""
    failures = list(err.failures.values())
    first = str(failures[0][0]).strip().splitlines()[0][:300] if failures else str(err)[:300]
    if size != "lab":
        return (f"load_sharded let a checkpoint of another model reach dcp.load, which failed inside DCP "
                f"(CheckpointException: {first}): compare the checkpoint's shapes "
                f"(read_metadata().state_dict_metadata) with the model's before dcp.load, and raise "
                f"ValueError naming the tensor and both shapes")
    return (f"load_sharded failed inside dcp.load (CheckpointException: {first}): the state dict it loads "
            f"into must hold this model's and optimizer's entries, as get_state_dict(model, optimizer) "
            f"returns them")


def ckpt_train_save(apply_fsdp2: Callable, save_fn: Callable, path: str, steps: int = 2, total: int = 0,
                    policy: str = "block", batch: int = BATCH, seed: int = 0) -> dict[str, Any]:
    """Train ``steps`` steps, ``save_fn(model, optimizer, path)``, then keep training to ``total`` steps (the
    uninterrupted run). Returns the save time and the final parameters."""
    model, opt, sched = _fsdp2_model(apply_fsdp2, policy, seed, "lab")
    _train(model, opt, sched, 0, steps, batch, seed, "lab")
    lr = opt.param_groups[0]["lr"]  # the learning rate the next step uses (the scheduler changed it)
    t0 = time.perf_counter()
    save_fn(model, opt, path)
    save_s = time.perf_counter() - t0
    _train(model, opt, sched, steps, max(total, steps), batch, seed, "lab")
    return {"save_s": save_s, "params": param_dict(model), "lr": lr}


def ckpt_resume(apply_fsdp2: Callable, load_fn: Callable, path: str, steps: int = 2, more: int = 1,
                policy: str = "block", batch: int = BATCH, seed: int = 1,
                size: str = "lab") -> dict[str, Any]:
    """Build a fresh model (another seed: nothing but the checkpoint can make it equal), ``load_fn`` it, train
    ``more`` steps from step ``steps`` (the scheduler in the loop, built before the load: the learning rate
    is the optimizer's, as loaded). A ValueError from ``load_fn`` is returned as ``{"error": message}``;
    DCP's CheckpointException (raised on every rank alike) as ``{"error": None, "dcp_error": what it
    means}`` into another model, and as a RuntimeError saying so into the lab model."""
    model, opt, sched = _fsdp2_model(apply_fsdp2, policy, seed, size)
    t0 = time.perf_counter()
    try:
        load_fn(model, opt, path)
    except ValueError as err:
        return {"error": str(err)}
    except CheckpointException as err:
        if size == "lab":
            raise RuntimeError(_dcp_failure(err, size)) from None
        return {"error": None, "dcp_error": _dcp_failure(err, size)}
    load_s = time.perf_counter() - t0
    lr = opt.param_groups[0]["lr"]
    _train(model, opt, sched, steps, steps + more, batch, 0, "lab" if size == "lab" else size)
    return {"load_s": load_s, "params": param_dict(model), "error": None, "lr": lr}


def ckpt_resume_check(apply_fsdp2: Callable, load_fn: Callable, path: str, steps: int = 2,
                      policy: str = "block") -> dict[str, Any]:
    """One launch: resume the lab model from ``path`` (one more step), then try loading the same checkpoint
    into three *different* models, each of which must raise ValueError naming what differs: wider blocks
    (``wrong_model_error``: other shapes), one block more (``extra_error``: tensors the checkpoint lacks) and
    one block fewer (``missing_error``: checkpoint tensors the model lacks)."""
    out = ckpt_resume(apply_fsdp2, load_fn, path, steps, 1, policy)
    out["dcp_errors"] = {}  # what a loader without the shape check ran into instead (key: as below)
    for key, size in (("wrong_model_error", "wide"), ("extra_error", "deep"), ("missing_error", "shallow")):
        res = ckpt_resume(apply_fsdp2, load_fn, path, steps, 1, policy, size=size)
        out[key] = res.get("error")
        if res.get("dcp_error"):
            out["dcp_errors"][key] = res["dcp_error"]
    return out
