"""Lab 03 exercise 5: a sharded checkpoint written at one world size and loaded at another.

Both rank functions train the lab model under FSDP2 (applied by the student's ``apply_fsdp2``) and call the
student's ``save_sharded`` / ``load_sharded``; the resumed run's next step is compared with the uninterrupted
run's. DCP writes one file per rank plus ``.metadata`` (the commit marker) and reshards at load time.

    course_dist.launch(lab03.ckpt_train_save, 2, args=(apply_fsdp2, save_sharded, path, 2))
    course_dist.launch(lab03.ckpt_resume, 3, args=(apply_fsdp2, load_sharded, path, 2))
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

import course_dist
from course_dist.labkit.lab03.harness import BATCH, LR, WD, _loss
from course_dist.labkit.lab03.model import make_model, param_dict, wrap_policy


def _fsdp2_model(apply_fsdp2: Callable, policy: str, seed: int, size: str) -> tuple[Any, Any]:
    model = make_model(seed, size).to(course_dist.device())
    model = apply_fsdp2(model, wrap_policy(model, policy), True) or model
    return model, torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WD)


def _train(model: Any, opt: Any, first: int, last: int, batch: int, seed: int, size: str) -> None:
    for step in range(first, last):
        opt.zero_grad(set_to_none=True)
        _loss(model, step, batch, seed, size).backward()
        opt.step()


def ckpt_train_save(apply_fsdp2: Callable, save_fn: Callable, path: str, steps: int = 2, total: int = 0,
                    policy: str = "block", batch: int = BATCH, seed: int = 0) -> dict[str, Any]:
    """Train ``steps`` steps, ``save_fn(model, optimizer, path)``, then keep training to ``total`` steps (the
    uninterrupted run). Returns the save time and the final parameters."""
    model, opt = _fsdp2_model(apply_fsdp2, policy, seed, "lab")
    _train(model, opt, 0, steps, batch, seed, "lab")
    t0 = time.perf_counter()
    save_fn(model, opt, path)
    save_s = time.perf_counter() - t0
    _train(model, opt, steps, max(total, steps), batch, seed, "lab")
    return {"save_s": save_s, "params": param_dict(model)}


def ckpt_resume(apply_fsdp2: Callable, load_fn: Callable, path: str, steps: int = 2, more: int = 1,
                policy: str = "block", batch: int = BATCH, seed: int = 1,
                size: str = "lab") -> dict[str, Any]:
    """Build a fresh model (another seed: nothing but the checkpoint can make it equal), ``load_fn`` it, train
    ``more`` steps from step ``steps``. A ValueError from ``load_fn`` is returned as
    ``{"error": message}``."""
    model, opt = _fsdp2_model(apply_fsdp2, policy, seed, size)
    t0 = time.perf_counter()
    try:
        load_fn(model, opt, path)
    except ValueError as err:
        return {"error": str(err)}
    load_s = time.perf_counter() - t0
    _train(model, opt, steps, steps + more, batch, 0, "lab" if size == "lab" else size)
    return {"load_s": load_s, "params": param_dict(model), "error": None}


def ckpt_resume_check(apply_fsdp2: Callable, load_fn: Callable, path: str, steps: int = 2,
                      policy: str = "block") -> dict[str, Any]:
    """One launch: resume the lab model from ``path`` (one more step), then try loading the same checkpoint
    into three *different* models, each of which must raise ValueError naming what differs: wider blocks
    (``wrong_model_error``: other shapes), one block more (``extra_error``: tensors the checkpoint lacks) and
    one block fewer (``missing_error``: checkpoint tensors the model lacks)."""
    out = ckpt_resume(apply_fsdp2, load_fn, path, steps, 1, policy)
    for key, size in (("wrong_model_error", "wide"), ("extra_error", "deep"), ("missing_error", "shallow")):
        out[key] = ckpt_resume(apply_fsdp2, load_fn, path, steps, 1, policy, size=size).get("error")
    return out
