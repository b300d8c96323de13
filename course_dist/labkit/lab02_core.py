"""Lab 02 core: the model, the data, fingerprints, a collective recorder and the training loops the tests
compare (naive, torch DDP, one process, bucketed). Import it as ``course_dist.labkit.lab02`` (the facade).

Nothing here solves an exercise. Every harness takes the student's function as an argument, so the same
harness measures a student's answer, the reference, or (where it makes sense) torch's own implementation side
by side.

Single process (a notebook cell)::

    from course_dist.labkit import lab02
    model = lab02.LabNet(lab02.model_config())       # the lab's model (size from COURSE_FAST)

Inside ranks (what the notebook's cells do)::

    course_dist.launch(lab02.bug_no_broadcast, world_size=2, args=(check_replicas,))

Under torchrun the rank functions run unchanged: ``torchrun --nproc-per-node 2 -m course_dist.run
course_dist.labkit.lab02:bug_no_broadcast`` needs a ``check`` argument, so call them from your own module
instead.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

log = logging.getLogger("course_dist.labkit.lab02")
MB = 1 << 20


# ---- model, data ----
@dataclass(frozen=True)
class ModelConfig:
    """Size of the lab's MLP (fp32).

    Attributes:
        d_in: input features; also the width of the frozen input projection (d_in x d_in,
            requires_grad=False).
        width: hidden width of every trainable block; the parameter count grows as depth * width**2.
        depth: number of hidden Linear+ReLU blocks after the input block.
        classes: output classes of the head (and of the auxiliary head, used only when asked).
    """

    d_in: int = 64
    width: int = 512
    depth: int = 6
    classes: int = 10

    def __post_init__(self) -> None:
        for name in ("d_in", "width", "depth", "classes"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"ModelConfig.{name} must be a positive int, got {v!r}")


def model_config(size: str = "lab") -> ModelConfig:
    """``"lab"``: the measured model (1.6 M params full, 0.2 M fast); ``"tiny"``: the one the tests train."""
    from course_dist import pick

    if size == "tiny":
        return ModelConfig(d_in=16, width=32, depth=2, classes=4)
    if size == "lab":
        return ModelConfig(width=pick(full=512, fast=192), depth=pick(full=6, fast=4))
    raise ValueError(f"size must be 'lab' or 'tiny', got {size!r}")


class LabNet(nn.Module):
    """An MLP with everything DDP has to respect: a buffer, a frozen parameter and an optionally unused head.

    - ``scale`` (buffer): a random per-feature input scale. Not a parameter, so a broadcast of parameters
      alone leaves replicas different.
    - ``frozen`` (Linear, requires_grad=False): a "pretrained" projection; no gradient, never all-reduced.
    - ``aux`` (Linear): an auxiliary head used only when ``forward(x, use_aux=True)``; otherwise its
      parameters get no gradient at all (``.grad is None``) - an *unused parameter* in DDP's sense.
    """

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.register_buffer("scale", torch.rand(cfg.d_in) + 0.5)
        self.frozen = nn.Linear(cfg.d_in, cfg.d_in)
        self.frozen.requires_grad_(False)
        layers: list[nn.Module] = [nn.Linear(cfg.d_in, cfg.width), nn.ReLU()]
        for _ in range(cfg.depth):
            layers += [nn.Linear(cfg.width, cfg.width), nn.ReLU()]
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(cfg.width, cfg.classes)
        self.aux = nn.Linear(cfg.width, cfg.classes)

    def forward(self, x: torch.Tensor, use_aux: bool = False) -> torch.Tensor:
        h = self.body(self.frozen(x * self.scale))
        out = self.head(h)
        return out + self.aux(h) if use_aux else out


def make_model(cfg: ModelConfig, seed: int) -> LabNet:
    """A LabNet initialised from ``seed`` on ``course_dist.device()`` (cpu under gloo, cuda:<local rank> under
    NCCL)."""
    from course_dist import device

    torch.manual_seed(seed)
    return LabNet(cfg).to(device())


def make_data(n: int, cfg: ModelConfig, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` samples of a synthetic classification task (a fixed random teacher labels Gaussian inputs)."""
    # one fixed teacher (the task), samples drawn from ``seed`` (train, eval and per-step batches differ)
    teacher = torch.randn(cfg.d_in, cfg.classes, generator=torch.Generator().manual_seed(12345))
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, cfg.d_in, generator=g)
    y = (x @ teacher + 0.5 * torch.randn(n, cfg.classes, generator=g)).argmax(dim=1)
    return x, y


def global_batch(step: int, n: int, cfg: ModelConfig, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """The global batch of ``step`` (same on every rank). Rank r trains on rows ``[r*B:(r+1)*B]`` of it."""
    return make_data(n, cfg, seed=1000 * seed + step)


# ---- fingerprints ----
def fingerprint(tensors: Iterable[torch.Tensor]) -> torch.Tensor:
    """Three float64 numbers that change when any element of any tensor changes: (sum, sum of squares, sum of
    x_i * sin(i + 1)). The last one catches permutations that the first two miss. Returned on the tensors'
    device."""
    flat = [t.detach().reshape(-1).to(torch.float64) for t in tensors]
    if not flat:
        return torch.zeros(3, dtype=torch.float64)
    x = torch.cat(flat)
    w = torch.sin(torch.arange(1, x.numel() + 1, dtype=torch.float64, device=x.device))
    return torch.stack([x.sum(), (x * x).sum(), (x * w).sum()])


def state_fingerprint(model: nn.Module) -> dict[str, list[float]]:
    """Fingerprints of the parameters and of the buffers as plain floats (what a rank returns)."""
    return {
        "params": fingerprint(model.parameters()).tolist(),
        "buffers": fingerprint(model.buffers()).tolist(),
    }


class ContractViolation(AssertionError):
    """Replicas that must be identical are not. ``.name`` says what was compared, ``.ranks`` which ranks
    differ from rank 0 (the source of truth, as in DDP's broadcast from rank 0)."""

    def __init__(self, name: str, ranks: list[int], detail: str = "") -> None:
        super().__init__(f"{name} diverged on rank(s) {ranks} (compared with rank 0). {detail}".strip())
        self.name = name
        self.ranks = ranks


# ---- recorder ----
@contextmanager
def record_collectives() -> Iterator[list[dict[str, Any]]]:
    """In a rank: record every ``dist.all_reduce`` / ``broadcast`` / ``all_gather`` call made through the
    ``torch.distributed`` namespace: ``{"op", "numel", "async_op", "t"}`` (t = time.perf_counter() at the
    call).

    Used by the structural tests of exercise 5 ("how many collectives did this backward launch, and when?"),
    independently of ``launch(trace=True)``, and with a clock shared with the test's own marks."""
    calls: list[dict[str, Any]] = []
    saved = {op: getattr(dist, op) for op in ("all_reduce", "broadcast", "all_gather")}

    def wrap(op: str, fn: Callable) -> Callable:
        def wrapper(tensor: Any, *args: Any, **kwargs: Any) -> Any:
            t = tensor[0] if isinstance(tensor, list) else tensor
            calls.append({"op": op, "numel": int(t.numel()), "async_op": bool(kwargs.get("async_op", False)),
                          "t": time.perf_counter()})
            return fn(tensor, *args, **kwargs)

        return wrapper

    for op, fn in saved.items():
        setattr(dist, op, wrap(op, fn))
    try:
        yield calls
    finally:
        for op, fn in saved.items():
            setattr(dist, op, fn)


# ---- training loops ----
def _sync_device() -> None:
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def _sgd(model: nn.Module) -> torch.optim.Optimizer:
    # Momentum makes a wrong gradient compound over steps, so a small error becomes a visible one.
    # Weight decay moves every parameter that has a gradient - even a zero one - so a parameter that should
    # have been left alone (unused everywhere: grad None) visibly changes if someone filled its grad with
    # zeros.
    return torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.05, momentum=0.9,
                           weight_decay=0.01)


def _shard(step: int, batch: int, cfg: ModelConfig, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    from course_dist import device

    r, w = dist.get_rank(), dist.get_world_size()
    x, y = global_batch(step, batch * w, cfg, seed)
    return x[r * batch:(r + 1) * batch].to(device()), y[r * batch:(r + 1) * batch].to(device())


def _use_aux(unused: str) -> bool:
    # "none": aux used everywhere; "all": aux unused on every rank; "rank0": used on rank 0 only.
    return {"none": True, "all": False, "rank0": dist.get_rank() == 0}[unused]


def train_naive(average_gradients: Callable, steps: int = 4, batch: int = 8, seed: int = 0,
                unused: str = "all", size: str = "tiny") -> dict[str, torch.Tensor]:
    """Rank function: ``steps`` SGD steps, gradients synchronised by ``average_gradients(model)`` after
    backward. Returns the model's state dict (cpu) plus ``"aux_grad_is_none"``."""
    cfg = model_config(size)
    model = make_model(cfg, seed)  # same seed on every rank: replicas start equal without a broadcast
    opt = _sgd(model)
    for step in range(steps):
        x, y = _shard(step, batch, cfg, seed)
        opt.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(model(x, use_aux=_use_aux(unused)), y).backward()
        average_gradients(model)
        opt.step()
    out = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
    out["aux_grad_is_none"] = torch.tensor(model.aux.weight.grad is None)
    return out


def train_torch_ddp(steps: int = 4, batch: int = 8, seed: int = 0, unused: str = "all", size: str = "tiny",
                    accum: int = 1) -> dict[str, torch.Tensor]:
    """The same loop with ``torch.nn.parallel.DistributedDataParallel`` (the reference the lab matches).
    ``accum`` > 1: gradient accumulation, the first ``accum - 1`` micro-batches under ``no_sync()``."""
    cfg = model_config(size)
    model = make_model(cfg, seed)
    ddp = nn.parallel.DistributedDataParallel(model, find_unused_parameters=unused != "none")
    opt = _sgd(model)
    for step in range(steps):
        opt.zero_grad(set_to_none=True)
        for micro in range(accum):
            x, y = _shard(step * accum + micro, batch, cfg, seed)
            ctx = ddp.no_sync() if micro < accum - 1 else _nullcontext()
            with ctx:
                nn.functional.cross_entropy(ddp(x, use_aux=_use_aux(unused)), y).backward()
        opt.step()
    return {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}


@contextmanager
def _nullcontext() -> Iterator[None]:
    yield


def train_single(world: int, steps: int = 4, batch: int = 8, seed: int = 0, unused: str = "all",
                 size: str = "tiny") -> dict[str, torch.Tensor]:
    """One process, the *global* batch (world * batch rows) per step: what data parallelism must reproduce."""
    cfg = model_config(size)
    torch.manual_seed(seed)
    model = LabNet(cfg)
    opt = _sgd(model)
    for step in range(steps):
        x, y = global_batch(step, batch * world, cfg, seed)
        opt.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(model(x, use_aux=unused == "none"), y).backward()
        opt.step()
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def max_abs_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    """Largest |a - b| over the tensors both state dicts hold (floating tensors only)."""
    keys = [k for k in a if k in b and a[k].is_floating_point()]
    return max(float((a[k].double() - b[k].double()).abs().max()) for k in keys)


def train_bucketed(ddp_cls: Callable, steps: int = 3, batch: int = 8, seed: int = 0, size: str = "tiny",
                   accum: int = 1, bucket_cap_mb: float = 25.0,
                   first_bucket_mb: float = 1.0) -> dict[str, Any]:
    """Rank function for exercise 5: train with ``ddp_cls(model, bucket_cap_mb=..., first_bucket_mb=...)`` and
    record the structure of every step: collectives per (micro)step, their sizes in launch order, how many had
        been launched when ``backward()`` returned, and whether they were async. Returns the state dict and
        the records."""
    cfg = model_config(size)
    model = make_model(cfg, seed)
    ddp = ddp_cls(model, bucket_cap_mb=bucket_cap_mb, first_bucket_mb=first_bucket_mb)
    opt = _sgd(model)
    records = []
    for step in range(steps):
        opt.zero_grad(set_to_none=True)
        for micro in range(accum):
            x, y = _shard(step * accum + micro, batch, cfg, seed)
            sync = micro == accum - 1
            with record_collectives() as calls, (_nullcontext() if sync else ddp.no_sync()):
                loss = nn.functional.cross_entropy(ddp(x, use_aux=True), y)
                t0 = time.perf_counter()
                loss.backward()
                t_bwd, n_at_bwd_end, wall_bwd = time.perf_counter(), len(calls), time.time()
                if sync:
                    ddp.finish_gradient_synchronization()
            records.append({"step": step, "micro": micro, "sync": sync, "n_calls": len(calls),
                            "numels": [c["numel"] for c in calls], "n_at_backward_end": n_at_bwd_end,
                            "all_async": all(c["async_op"] for c in calls),
                            "first_start_before_bwd_end": bool(calls) and calls[0]["t"] < t_bwd,
                            "bwd_s": t_bwd - t0, "t_backward_end_wall": wall_bwd})
        opt.step()
    state = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
    return {"state": state, "records": records}


def trainable_sizes(size: str = "tiny") -> list[int]:
    """Bytes of each trainable parameter of the model, in registration order (what bucketing works on)."""
    torch.manual_seed(0)
    return [p.numel() * p.element_size() for p in LabNet(model_config(size)).parameters() if p.requires_grad]
