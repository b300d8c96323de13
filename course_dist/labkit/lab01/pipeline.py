"""Pipeline parallelism over real send/recv: an executor that runs a student's schedule (an ordered list of
("F", i) / ("B", i) actions per stage), torch.distributed.pipelining as the oracle, and the kill drill.

The lab model's blocks are cut into ``p`` contiguous stages (stage ``p - 1`` also holds the head and the
loss).
Each micro-batch loss is divided by ``m`` so that the accumulated gradients equal the full-batch mean (torch's
schedules do the same with ``scale_grads=True``). Sends are ``isend`` (waited at the end of the step) and
receives are blocking: a schedule that is valid on paper cannot deadlock on a full send buffer.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from course_dist.labkit.lab01.model import ModelConfig, build_model, make_data, model_config


class Stage(nn.Module):
    """Blocks ``[lo, hi)`` of the lab model, plus the head on the last stage."""

    def __init__(self, model: nn.Module, stage: int, p: int) -> None:
        super().__init__()
        layers = len(model.blocks)
        if not 1 <= p <= layers:
            raise ValueError(f"p = {p} stages for a model of {layers} layers: need 1 <= p <= layers")
        lo, hi = stage * layers // p, (stage + 1) * layers // p
        self.lo = lo
        self.blocks = nn.ModuleList(model.blocks[lo:hi])
        self.head = model.head if stage == p - 1 else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for b in self.blocks:
            x = b(x)
        return x if self.head is None else self.head(x)

    def full_names(self) -> dict[str, torch.nn.Parameter]:
        """Parameters under the names they have in the unsplit model."""
        out = {}
        for name, prm in self.named_parameters():
            if name.startswith("blocks."):
                k, rest = name.split(".", 2)[1:]
                name = f"blocks.{int(k) + self.lo}.{rest}"
            out[name] = prm
        return out


def check_actions(actions: list[tuple[str, int]], m: int, stage: int) -> None:
    """Every micro-batch exactly once forward and once backward, backward after its forward; else
    ValueError."""
    seen_f: set[int] = set()
    seen_b: set[int] = set()
    for op, i in actions:
        if op not in ("F", "B") or not isinstance(i, int) or not 0 <= i < m:
            raise ValueError(f"stage {stage}: bad action {(op, i)!r} (want ('F' or 'B', 0 <= i < {m}))")
        if op == "B" and i not in seen_f:
            raise ValueError(f"stage {stage}: backward of micro-batch {i} before its forward")
        (seen_f if op == "F" else seen_b).add(i)
    if seen_f != set(range(m)) or seen_b != set(range(m)) or len(actions) != 2 * m:
        raise ValueError(f"stage {stage}: each of the {m} micro-batches needs one F and one B, got {actions}")


def _data(batch: int, cfg: ModelConfig, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    return make_data(batch, cfg, seed=seed + 1)


def run_schedule(
    schedule_fn: Callable[[str, int, int, int], list],
    kind: str,
    m: int,
    batch: int = 32,
    seed: int = 0,
    cfg: ModelConfig | None = None,
    steps: int = 1,
) -> dict[str, Any]:
    """On each rank (= stage): execute ``schedule_fn(kind, stage, p, m)`` for ``steps`` steps; return the
    stage's gradients (full-model names), its loss (last stage), the peak number of micro-batches whose
    activations it held, and its compute spans (rank, step, kind, start, end) for ``plot_timeline``."""
    cfg = cfg or model_config()
    stage, p = dist.get_rank(), dist.get_world_size()
    mod = Stage(build_model(cfg, seed), stage, p)
    x, y = _data(batch, cfg, seed)
    xs, ys = x.chunk(m), y.chunk(m)
    actions = [tuple(a) for a in schedule_fn(kind, stage, p, m)]
    check_actions(actions, m, stage)
    last = stage == p - 1
    spans, loss_sum, peak = [], 0.0, 0
    for step in range(steps):
        for prm in mod.parameters():
            prm.grad = None
        dist.barrier()  # every stage starts the step together: the timeline shows the bubble, not start-up
        inputs, outputs, pending, held = {}, {}, [], 0
        loss_sum = 0.0
        for op, i in actions:
            if op == "F":
                if stage == 0:
                    inp = xs[i]
                else:
                    inp = torch.empty(xs[i].shape[0], cfg.d_model)
                    dist.recv(inp, stage - 1)
                    inp.requires_grad_(True)
                t0 = time.time()
                out = mod(inp)
                if last:
                    out = nn.functional.cross_entropy(out, ys[i]) / m
                    loss_sum += float(out.detach())
                spans.append((stage, step, "compute", t0, time.time()))
                if not last:
                    send = out.detach().contiguous()
                    pending.append((dist.isend(send, stage + 1), send))
                inputs[i], outputs[i] = inp, out
                held += 1
                peak = max(peak, held)
            else:
                out, inp = outputs.pop(i), inputs.pop(i)
                if last:
                    t0 = time.time()
                    out.backward()
                else:
                    g = torch.empty_like(out)
                    dist.recv(g, stage + 1)
                    t0 = time.time()
                    out.backward(g)
                spans.append((stage, step, "compute", t0, time.time()))
                if stage > 0:
                    send = inp.grad.contiguous()
                    pending.append((dist.isend(send, stage - 1), send))
                held -= 1
        for work, _ in pending:
            work.wait()
    return {
        "stage": stage,
        "grads": {k: v.grad.detach().clone() for k, v in mod.full_names().items()},
        "loss": loss_sum if last else None,
        "peak_held": peak,
        "spans": spans,
    }


def single_process(batch: int = 32, seed: int = 0, cfg: ModelConfig | None = None) -> dict[str, Any]:
    """The unsplit model on the whole batch: loss and every gradient (what the pipeline must equal)."""
    cfg = cfg or model_config()
    model = build_model(cfg, seed)
    x, y = _data(batch, cfg, seed)
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    return {"loss": float(loss.detach()), "grads": {k: v.grad for k, v in model.named_parameters()}}


def torch_schedule(
    kind: str, m: int, batch: int = 32, seed: int = 0, cfg: ModelConfig | None = None, steps: int = 1
) -> dict[str, Any]:
    """torch.distributed.pipelining's ScheduleGPipe / Schedule1F1B on the same stages and data: the oracle
    (gradients, loss, median seconds per step)."""
    import statistics

    from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

    cfg = cfg or model_config()
    stage, p = dist.get_rank(), dist.get_world_size()
    mod = Stage(build_model(cfg, seed), stage, p)
    x, y = _data(batch, cfg, seed)
    pstage = PipelineStage(mod, stage_index=stage, num_stages=p, device=torch.device("cpu"))
    cls = {"gpipe": ScheduleGPipe, "1f1b": Schedule1F1B}[kind]
    sched = cls(pstage, n_microbatches=m, loss_fn=nn.functional.cross_entropy)
    times, losses = [], []
    _torch_steps(sched, mod, x, y, stage, p, steps, times, losses)
    loss = float(sum(float(v.detach()) for v in losses) / m) if losses else None
    return {
        "grads": {k: v.grad.detach().clone() for k, v in mod.full_names().items()},
        "loss": loss,
        "step_s": statistics.median(times),
    }


def _torch_steps(
    sched: Any,
    mod: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    stage: int,
    p: int,
    steps: int,
    times: list,
    losses: list,
) -> None:
    for _ in range(steps):
        for prm in mod.parameters():
            prm.grad = None
        losses.clear()
        dist.barrier()
        t0 = time.perf_counter()
        if stage == 0:
            sched.step(x)
        elif stage == p - 1:
            sched.step(target=y, losses=losses)
        else:
            sched.step()
        times.append(time.perf_counter() - t0)


def compare_schedules(
    schedule_fn: Callable, kinds: tuple[str, ...], m: int, batch: int = 32, seed: int = 0
) -> dict[str, dict[str, Any]]:
    """On each rank, one launch for all: for every kind, the student's schedule (``run_schedule``) and torch's
    (``torch_schedule``) on the same stages and data."""
    return {
        kind: {
            "mine": run_schedule(schedule_fn, kind, m, batch, seed),
            "torch": torch_schedule(kind, m, batch, seed),
        }
        for kind in kinds
    }


def time_schedule(schedule_fn: Callable, kind: str, m: int, batch: int, steps: int) -> float:
    """Median seconds per step of the student's schedule (all stages start together)."""
    import statistics

    r = run_schedule(schedule_fn, kind, m, batch, steps=steps)
    by_step: dict[int, list] = {}
    for _, step, _, t0, t1 in r["spans"]:
        by_step.setdefault(step, []).append((t0, t1))
    t = torch.tensor(
        [statistics.median(max(e for _, e in v) - min(s for s, _ in v) for v in by_step.values())]
    )
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t)


def _kill_rank(steps: int, mark: str, kill_step: int) -> int:
    import course_dist

    cfg = model_config()
    stage, p = dist.get_rank(), dist.get_world_size()
    mod = Stage(build_model(cfg), stage, p)
    x, _ = make_data(8, cfg)
    for step in range(steps):
        if step == kill_step and stage == 1:
            fd = os.open(mark, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # the moment of death
            os.write(fd, repr(time.time()).encode())
            os.close(fd)
        course_dist.step(step)  # the fault plan fires here
        with torch.no_grad():
            if stage == 0:
                dist.send(mod(x), 1)  # stage 0 blocks on its peer every step
            else:
                buf = torch.empty(8, cfg.d_model)
                dist.recv(buf, 0)
                mod(buf)
    return steps


def kill_drill(kill_step: int = 3, steps: int = 1000, timeout: float = 60.0) -> dict[str, Any]:
    """SIGKILL stage 1 of a 2-stage pipeline at ``kill_step``: which rank ``launch`` names and how long after
    the kill (written by the dying rank) it reports it."""
    from course_dist import Fault, RankError, launch

    with tempfile.TemporaryDirectory(prefix="lab01-kill-") as tmp:
        mark = os.path.join(tmp, "killed_at")
        try:
            launch(
                _kill_rank,
                world_size=2,
                args=(steps, mark, kill_step),
                faults=[Fault("kill", rank=1, step=kill_step)],
                timeout=timeout,
                stream=False,
            )
            outcome, rank = "finished (unexpected)", None
        except RankError as exc:
            outcome, rank = f"RankError: {exc.signal_name or exc.exc_type}", exc.rank
        t_report = time.time()
        try:
            with open(mark) as f:
                t_kill = float(f.read())
        except (OSError, ValueError):
            t_kill = float("nan")
    return {
        "killed rank": 1,
        "at step": kill_step,
        "reported rank": rank,
        "outcome": outcome,
        "detect_s": t_report - t_kill,
    }
