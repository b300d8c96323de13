"""Lab 02 machinery - "DDP under the hood": model, data, rank functions, measurement harnesses and plots.

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
import math
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


def _preload_dynamo() -> None:
    # Constructing torch's DistributedDataParallel imports torch._dynamo (~800 modules, 4-7 s on a busy 2-core
    # box) in *every* fresh rank. Ranks are forks of course_dist's forkserver: preloading it there once makes
    # each DDP rank start in milliseconds. Only possible before the server starts (the first launch).
    # TODO(lead): move "torch._dynamo" into course_dist._mp.PRELOAD and delete this.
    from course_dist import _mp

    if getattr(_mp, "_server", None) is None and "torch._dynamo" not in _mp.PRELOAD:
        _mp.PRELOAD.append("torch._dynamo")


_preload_dynamo()


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
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, cfg.d_in, generator=g)
    teacher = torch.randn(cfg.d_in, cfg.classes, generator=g)
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
                t_bwd, n_at_bwd_end = time.perf_counter(), len(calls)
                if sync:
                    ddp.finish_gradient_synchronization()
            records.append({"step": step, "micro": micro, "sync": sync, "n_calls": len(calls),
                            "numels": [c["numel"] for c in calls], "n_at_backward_end": n_at_bwd_end,
                            "all_async": all(c["async_op"] for c in calls),
                            "first_start_before_bwd_end": bool(calls) and calls[0]["t"] < t_bwd,
                            "bwd_s": t_bwd - t0})
        opt.step()
    state = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
    return {"state": state, "records": records}


def trainable_sizes(size: str = "tiny") -> list[int]:
    """Bytes of each trainable parameter of the model, in registration order (what bucketing works on)."""
    torch.manual_seed(0)
    return [p.numel() * p.element_size() for p in LabNet(model_config(size)).parameters() if p.requires_grad]


# ---- exercise 2, 4, 6 checks ----
def broadcast_check(broadcast_model: Callable, src: int = 0) -> dict[str, Any]:
    """Rank function: seed differently per rank, build the model, fingerprint, ``broadcast_model(model,
    src)``, fingerprint again; also whether the parameter/buffer objects are the same ones (in-place update).
    """
    torch.manual_seed(100 + dist.get_rank())
    model = make_model(model_config("tiny"), seed=100 + dist.get_rank())
    before, ids = state_fingerprint(model), [id(t) for t in [*model.parameters(), *model.buffers()]]
    broadcast_model(model, src)
    same = ids == [id(t) for t in [*model.parameters(), *model.buffers()]]
    return {"before": before, "after": state_fingerprint(model), "same_objects": same}


def ring_input(n: int, rank: int) -> torch.Tensor:
    """Rank ``rank``'s input of length ``n`` for the ring tests (float32, deterministic)."""
    return torch.randn(n, generator=torch.Generator().manual_seed(1000 * rank + n))


def ring_check(ring_all_reduce: Callable, lengths: list[int]) -> dict[int, torch.Tensor]:
    """Rank function: run ``ring_all_reduce`` on ``ring_input(n, rank)`` for each length with
    ``dist.all_reduce`` disabled (the point is to build it from send/recv). Returns ``{n: result (cpu)}``;
    also checks that it works in place."""
    from course_dist import device

    def forbidden(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("ring_all_reduce must use send/recv, not dist.all_reduce")

    saved, dist.all_reduce = dist.all_reduce, forbidden
    try:
        out = {}
        for n in lengths:
            t = ring_input(n, dist.get_rank()).to(device())
            res = ring_all_reduce(t)
            if res is not None and res.data_ptr() != t.data_ptr() and n:
                raise AssertionError(f"length {n}: ring_all_reduce must work in place and return its input")
            out[n] = t.cpu()
    finally:
        dist.all_reduce = saved
    return out


def clean_check(check: Callable) -> list[int]:
    """Rank function: identical replicas (same seed everywhere); the checker must stay silent. Returns named
    ranks."""
    model = make_model(model_config("tiny"), seed=3)
    try:
        check("parameters", list(model.parameters()))
    except ContractViolation as exc:
        return exc.ranks
    return []


def one_ulp_check(check: Callable) -> list[int]:
    """Rank function: the last rank nudges one weight by one float32 ulp - replicas "close" but not equal."""
    model = make_model(model_config("tiny"), seed=3)
    if dist.get_rank() == dist.get_world_size() - 1:
        with torch.no_grad():
            w = model.head.weight
            w[0, 0] = torch.nextafter(w[0, 0], torch.tensor(math.inf, device=w.device))
    try:
        check("parameters", list(model.parameters()))
    except ContractViolation as exc:
        return exc.ranks
    return []


def _kill_drill_rank(steps: int) -> int:
    import course_dist

    cfg = model_config("tiny")
    model = make_model(cfg, 0)
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = _sgd(model)
    for step in range(steps):
        course_dist.step(step)  # the fault plan fires here
        x, y = _shard(step, 8, cfg, 0)
        opt.zero_grad()
        nn.functional.cross_entropy(ddp(x), y).backward()
        opt.step()
    return steps


def kill_drill(kill_step: int = 3, steps: int = 1000) -> dict[str, Any]:
    """What plain DDP does when a rank dies: SIGKILL rank 1 at ``kill_step`` of a torch DDP job (world 2) and
    time how long until the launch reports it. Nothing recovers: the whole job stops."""
    from course_dist import Fault, RankError, launch

    t0 = time.perf_counter()
    try:
        launch(_kill_drill_rank, world_size=2, args=(steps,), faults=[Fault("kill", rank=1, step=kill_step)],
               timeout=60, stream=False)
        outcome, rank = "finished (unexpected)", None
    except RankError as exc:
        outcome, rank = f"{type(exc).__name__}: {exc.signal_name or exc.exc_type}", exc.rank
    return {"killed rank": 1, "at step": kill_step, "reported rank": rank, "outcome": outcome,
            "detect_s": time.perf_counter() - t0, "steps completed by survivors": kill_step}


# ---- measurements ----
def time_steps(impl: str, *, steps: int, batch: int, average_gradients: Callable | None = None,
               ddp_cls: Callable | None = None, bucket_cap_mb: float = 25.0,
               warmup: int = 2) -> dict[str, float]:
    """Rank function: median seconds per training step of ``impl`` ("naive", "bucketed", "torch") on the lab
    model."""
    cfg = model_config("lab")
    model = make_model(cfg, 0)
    if impl == "naive":
        fwd, sync = model, (lambda: average_gradients(model))
    elif impl == "bucketed":
        fwd = ddp_cls(model, bucket_cap_mb=bucket_cap_mb)
        sync = fwd.finish_gradient_synchronization
    elif impl == "torch":
        fwd, sync = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=bucket_cap_mb), (lambda: None)
    else:
        raise ValueError(f"impl must be naive, bucketed or torch, got {impl!r}")
    opt = _sgd(model)
    times = []
    for step in range(warmup + steps):
        x, y = _shard(step, batch, cfg, 0)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(fwd(x, use_aux=True), y).backward()
        sync()
        opt.step()
        if step >= warmup:
            times.append(time.perf_counter() - t0)
    return {"step_s": sorted(times)[len(times) // 2]}


def measure_ddp(impls: dict[str, dict[str, Any]], worlds: list[int], *, steps: int, batch: int,
                timeout: float = 120.0) -> Any:
    """Launch every (impl, world) once; one row each: impl, world, batch_per_rank, step_s (slowest rank's
    median), error (why a row has no number: a stub that raises, a hang). ``impls`` maps a name to
    ``time_steps`` kwargs."""
    import pandas as pd
    from tqdm.auto import tqdm

    from course_dist import launch

    rows = []
    runs = [(i, w) for i in impls.items() for w in worlds]
    for (name, kw), world in tqdm(runs, desc="measure", leave=False):
        row = {"impl": name, "world": world, "batch_per_rank": batch, "step_s": math.nan, "error": ""}
        try:
            res = launch(time_steps, world_size=world, kwargs={"steps": steps, "batch": batch, **kw},
                         timeout=timeout, stream=False)
            row["step_s"] = max(r["step_s"] for r in res)
        except Exception as exc:  # a broken implementation is a row with a reason, not a dead notebook
            row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
            log.warning("%s at world %d failed: %s", name, world, row["error"])
        rows.append(row)
    return pd.DataFrame(rows)


def plot_step_times(table: Any, bucket_sweep: Any = None) -> Any:
    """Step time per implementation and world (left) and, if given, step time against bucket cap (right)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2 if bucket_sweep is not None else 1, figsize=(10, 3.5), squeeze=False)
    ax = axes[0][0]
    for name, g in table.groupby("impl"):
        ax.plot(g["world"], g["step_s"] * 1e3, "o-", label=name)
    ax.set(xlabel="world size", ylabel="ms / step", title="step time (lower is better)")
    ax.legend()
    if bucket_sweep is not None:
        ax = axes[0][1]
        ax.semilogx(bucket_sweep["bucket_cap_mb"], bucket_sweep["step_s"] * 1e3, "o-")
        ax.set(xlabel="bucket cap (MB)", ylabel="ms / step", title="bucketed DDP, world 2")
    fig.tight_layout()
    return fig


def busbw_rank(ring_all_reduce: Callable, sizes_bytes: list[int], reps: int) -> list[dict[str, float]]:
    """Rank function: median time of ``ring_all_reduce`` and of ``dist.all_reduce`` (gloo's own) per message
    size."""
    from course_dist import device

    out = []
    for nbytes in sizes_bytes:
        t = torch.ones(max(nbytes // 4, 1), device=device())
        for name, fn in (("ring", ring_all_reduce), ("gloo", dist.all_reduce)):
            times = []
            for _ in range(reps + 1):
                dist.barrier()  # start together: we time the collective, not the other rank's arrival
                t0 = time.perf_counter()
                fn(t)
                times.append(time.perf_counter() - t0)
            out.append({"impl": name, "bytes": t.numel() * 4, "time_s": sorted(times[1:])[reps // 2]})
    return out


def measure_busbw(ring_all_reduce: Callable, world: int, sizes_bytes: list[int], reps: int = 5) -> Any:
    """Bus bandwidth (nccl-tests' definition: bytes/time * 2(R-1)/R) of the ring vs gloo, as a DataFrame."""
    import pandas as pd

    from course_dist import launch

    res = launch(busbw_rank, world_size=world, args=(ring_all_reduce, sizes_bytes, reps), timeout=300,
                 stream=False)
    df = pd.DataFrame(res[0])
    df["time_s"] = [max(r[i]["time_s"] for r in res) for i in range(len(res[0]))]
    df["busbw_GBps"] = df["bytes"] / df["time_s"] * 2 * (world - 1) / world / 1e9
    return df


def fit_alpha_beta(df: Any, impl: str, world: int) -> tuple[float, float]:
    """Least-squares fit of the ring model time = 2(R-1) * (alpha + (bytes/R) * beta) to one implementation's
    rows. Returns (alpha seconds per message step, beta seconds per byte)."""
    g = df[df["impl"] == impl]
    steps = 2 * (world - 1)
    a = torch.tensor([[steps, steps * b / world] for b in g["bytes"]], dtype=torch.float64)
    y = torch.tensor(list(g["time_s"]), dtype=torch.float64)
    sol = torch.linalg.lstsq(a, y.unsqueeze(1)).solution.squeeze(1)
    return float(sol[0]), float(sol[1])


def plot_busbw(df: Any, world: int) -> Any:
    """Measured bus bandwidth of ring and gloo against message size, with the alpha-beta model fitted to the
    ring."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for name, g in df.groupby("impl"):
        ax.loglog(g["bytes"], g["busbw_GBps"], "o-", label=f"{name} (measured)")
    alpha, beta = fit_alpha_beta(df, "ring", world)
    inv_beta = 1 / beta / 1e9 if beta > 0 else math.inf
    b = df[df["impl"] == "ring"]["bytes"]
    model_t = 2 * (world - 1) * (alpha + b / world * beta)
    ax.loglog(b, b / model_t * 2 * (world - 1) / world / 1e9, "k--",
              label=f"alpha-beta: alpha={alpha * 1e6:.0f} us, 1/beta={inv_beta:.2f} GB/s")
    ax.set(xlabel="message bytes", ylabel="bus bandwidth (GB/s)", title=f"all-reduce, world {world}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


# ---- exercise 1 ----
def epoch_coverage(rank_indices: Callable, n: int, world: int, epochs: int, seed: int = 0) -> Any:
    """What ``set_epoch`` buys: the fraction of the dataset each rank has seen after each epoch, with the
    epoch passed to the sampler (``set_epoch(e)``) and without it (every epoch replays epoch 0's order)."""
    import pandas as pd

    rows = []
    for with_epoch in (True, False):
        seen = [set() for _ in range(world)]
        for e in range(epochs):
            for r in range(world):
                epoch = e if with_epoch else 0
                seen[r].update(rank_indices(n, world, r, shuffle=True, seed=seed, epoch=epoch))
            rows.append({"set_epoch": with_epoch, "epoch": e,
                         "mean fraction of data seen per rank": sum(len(s) for s in seen) / world / n})
    return pd.DataFrame(rows)


def padded_eval(rank_indices: Callable, correct: torch.Tensor, worlds: list[int]) -> Any:
    """What padding does to an evaluation metric: accuracy computed over the union of every rank's indices (as
    a distributed eval with DistributedSampler(shuffle=False) does) vs the true accuracy of the whole set."""
    import pandas as pd

    n, rows = len(correct), []
    for world in worlds:
        idx = [i for r in range(world) for i in rank_indices(n, world, r, shuffle=False)]
        rows.append({"world": world, "samples evaluated": len(idx), "duplicates": len(idx) - len(set(idx)),
                     "true accuracy": float(correct.float().mean()),
                     "distributed accuracy": float(correct[idx].float().mean())})
    return pd.DataFrame(rows)


def eval_correctness(n: int = 30, seed: int = 0) -> torch.Tensor:
    """Per-sample correctness (bool) of a briefly trained LabNet on ``n`` held-out samples."""
    cfg = model_config("tiny")
    torch.manual_seed(seed)
    model = LabNet(cfg)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = make_data(512, cfg, seed)
    for _ in range(30):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    xe, ye = make_data(n, cfg, seed + 1)
    with torch.no_grad():
        return model(xe).argmax(1) == ye


# ---- exercise 6 ----
def bug_no_broadcast(check: Callable, seed: int = 0) -> list[int]:
    """Planted bug 1: each rank seeds its RNG with ``seed + rank`` (for per-rank augmentation) *before*
    building the model, and nobody broadcasts. ``check("parameters", model.parameters())`` must name the
    diverged ranks. Returns the ranks named (``[]`` if the checker saw nothing)."""
    torch.manual_seed(seed + dist.get_rank())  # the bug: rank-dependent seed, then model init
    model = LabNet(model_config("tiny"))
    try:
        check("parameters", list(model.parameters()))
    except ContractViolation as exc:
        return exc.ranks
    return []


def bug_skip_set_epoch(check: Callable, epochs: int = 3, n: int = 50) -> dict[str, Any]:
    """Planted bug 2: the last rank was restarted from a checkpoint that did not restore the epoch, so it
    never calls ``sampler.set_epoch(e)``. At the start of each epoch every rank checks its sampler state
    (seed, epoch):
    the first epoch where ``check`` raises and the ranks it names are returned, with the samples the job saw
    twice."""
    from torch.utils.data import DistributedSampler

    r, w = dist.get_rank(), dist.get_world_size()
    sampler = DistributedSampler(range(n), num_replicas=w, rank=r, shuffle=True, seed=0)
    for epoch in range(epochs):
        if r != w - 1:  # the bug: the restarted last rank skips set_epoch
            sampler.set_epoch(epoch)
        try:
            check("sampler state", [torch.tensor([sampler.seed, sampler.epoch], dtype=torch.float64)])
        except ContractViolation as exc:
            mine = torch.zeros(n)
            mine[list(sampler)] = 1
            dist.all_reduce(mine)  # how many ranks saw each sample this epoch
            return {"epoch": epoch, "ranks": exc.ranks, "seen twice": int((mine > 1).sum()),
                    "never seen": int((mine == 0).sum())}
    return {"epoch": None, "ranks": [], "seen twice": 0, "never seen": 0}


def bug_unused_param(check: Callable, seed: int = 0) -> str:
    """Planted bug 3: rank 0 adds an auxiliary loss (uses ``aux``), the others do not, under torch DDP with
    the default ``find_unused_parameters=False``. The other ranks never mark ``aux`` ready, so the bucket
    holding it is never all-reduced there: rank 0 waits for it at the end of backward while the others move on
    to the replica check's collective. Nobody can finish - a hang that only a launcher timeout turns into a
    diagnosis."""
    cfg = model_config("tiny")
    model = make_model(cfg, seed)
    ddp = nn.parallel.DistributedDataParallel(model)
    x, y = _shard(0, 8, cfg, seed)
    # the bug: a rank-dependent graph
    loss = nn.functional.cross_entropy(ddp(x, use_aux=dist.get_rank() == 0), y)
    loss.backward()
    check("parameters", list(model.parameters()))
    return "finished"


def plot_contract(rows: Any) -> None:
    """Log one line per planted bug (kept as a function so the notebook cell stays one line)."""
    for row in rows.to_dict("records"):
        log.info("%s", row)
