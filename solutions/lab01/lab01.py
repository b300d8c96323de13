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
# # Lab 01 — Choose data, sharded, tensor or pipeline parallelism
#
# **The brief.** *"Our eight-GPU job is slower than one GPU and loses progress when a machine fails. Every
# proposal must state its latency, cost, capacity and fallback limits."*
#
# **Where this lab sits.** Lab 01 reproduces the brief on real process groups (a naive data-parallel job
# slower at world 2 than at world 1, and a SIGKILL that loses every step) and builds the cost models that
# decide *what* to parallelize. Lab 02 overlaps the data-parallel step's communication, lab 03 shards the
# memory, lab 04 bounds a failure's cost, lab 05 finds hangs and stragglers, and the homework's trainer, at a
# 32x larger global batch (512), runs world 2 slightly faster than world 1 on a quiet box (the larger batch
# or the trainer alone does not).
#
# **Thesis.** Parallelize the resource that actually exceeds its budget, and stop when the added
# communication costs more than the split saves.
#
# **Measured or simulated.** Every number is either *measured* here (this machine's CPU cores, gloo on
# loopback) or *simulated*: a cost model calibrated by those measurements and extrapolated. Simulated figures
# say so, with their calibration; a CPU/gloo figure is not a GPU/NCCL fact.
#
# | | exercise | points | time |
# |---|---|---|---|
# | 1 | Frame and baseline: the brief reproduced | 10 | ~15 min |
# | 2 | Memory per rank | 13 | ~15 min |
# | 3 | Communication cost | 16 + 4 written | ~20 min |
# | 4 | Tensor parallel | 20 | ~20 min |
# | 5 | Decide, and the solution card | 12 + 10 written | ~20 min |
# | A | *Stretch:* pipeline schedules | 10 | ~20 min |
# | B | *Stretch:* activations decide the budget | 5 | ~15 min |
#
# The core path (exercises 1-5) is worth 85 points; the stretch exercises add 15, so 100 needs both
# stretches, and the core alone earns 85.
#
# Everything distributed runs in a real `torch.distributed` process group (`course_dist.launch(fn,
# world_size=2)`: gloo here, NCCL on a GPU node); a rank that dies is named within seconds, a hang becomes a
# `LaunchTimeout` with every rank's stack. Stuck? `hint("lab01.frame")` shows stage 1 (a nudge),
# `hint("lab01.frame", 2)` the approach, `hint("lab01.frame", 3)` a near-solution. Grading runs with
# `COURSE_FAST=1` (smaller sizes); the tests check your *models* exactly and your measurements only for
# consistency with themselves.

# %%
import math
import random
import statistics
from dataclasses import asdict

import pandas as pd
import torch
import torch.distributed as dist
from IPython.display import display
from torch import nn

import course_dist
from course_dist import hint, launch, pick  # noqa: F401 - hint(...) is yours to call
from course_dist.labkit import lab01

pd.set_option("display.precision", 4)
cfg = lab01.model_config()
print("fast mode:", course_dist.fast_mode(), "| lab model:", cfg, "|",
      f"{lab01.n_params(lab01.build_model(cfg)):,} parameters")

# %% [markdown]
# ## Exercise 1 — Frame and baseline: the brief reproduced (10 points, ~15 min)
#
# First reproduce the brief, with a metric (time and cost per sample, at a stated price) and a *measured*
# baseline. **The naive job** (`lab01.naive_dp_rank`): the lab model and the **same global batch** (16
# samples) at world 1 and 2 (and 4 in full mode); forward and backward; one blocking `all_reduce` per
# parameter tensor (no buckets, no overlap); the optimizer; every 10 steps a synchronous checkpoint by rank 0.
# `lab01.reproduce_brief` runs it with `course_dist.launch(..., trace=True)`, recording every collective's
# `t_start` / `t_end` per rank.
#
# A blocking collective's time on one rank is **waiting** for the last rank to arrive, then **transfer**
# once all have arrived. Write:
#
# - `split_wait(calls)`: `calls` has one row per rank per collective with columns `rank`, `group`, `seq`
#   (one collective is one `(group, seq)` pair: sequence numbers restart in every group), `t_start` and
#   `t_end` (seconds). Return `calls` with two new columns, rows and index unchanged: `wait_s` = the latest
#   `t_start` among the rows of the same collective minus this row's `t_start` (0 for the last to arrive, for
#   every rank tied last, and for a collective only one rank entered); `transfer_s` = this row's own `t_end`
#   minus that latest `t_start`. (`wait_s + transfer_s = t_end - t_start`.)
# - `baseline_metrics(step_s, batch, steps_to_target, price_per_device_hour, devices)` returns a dict:
#   `samples_per_s = devices * batch / step_s` (batch is per device), `time_to_target_s = steps_to_target *
#   step_s`, `cost_to_target = time_to_target_s / 3600 * devices * price_per_device_hour` and
#   `cost_per_million_samples = 1e6 / samples_per_s / 3600 * devices * price_per_device_hour`. If the target
#   was not reached (`steps_to_target is None`), both `time_to_target_s` and `cost_to_target` are `math.inf`
#   (`cost_per_million_samples` stays finite); a target reached at step 0 costs 0.
#
# The test checks `split_wait` on a known trace (two groups sharing seq numbers, rows in any order, a slow
# arrival, a tie, a one-rank collective, ranks leaving at different times) and on the real trace,
# `baseline_metrics` on known numbers, and that the measured world-2 throughput is below world 1's.
#
# Stuck? `hint("lab01.frame")`

# %%
brief = {
    "data": {"dataset_version": "teacher-v1 (seed 1, 1234)", "owner": "course staff",
             "event_time": "2026-11-30T00:00:00+00:00", "available_from": "2026-12-01T00:00:00+00:00",
             "available_until": "2027-06-30T00:00:00+00:00"},
    "metric": {"target_loss": pick(full=1.0, fast=2.0), "price_per_device_hour": 2.50, "devices": 1, "batch": 64},
}
BRIEF_BATCH = 16  # the naive job's global batch: 8 samples per rank at world 2


# %% nbgrader={"grade": false, "grade_id": "frame_solution", "locked": false, "schema_version": 3, "solution": true}
def split_wait(calls: pd.DataFrame) -> pd.DataFrame:
    """``calls`` with ``wait_s`` (until the last rank entered the same collective) and ``transfer_s`` (from
    then until this rank left it)."""
    ### BEGIN SOLUTION
    last = calls.groupby(["group", "seq"])["t_start"].transform("max")  # when the last rank arrived
    return calls.assign(wait_s=last - calls["t_start"], transfer_s=calls["t_end"] - last)
    ### END SOLUTION


def baseline_metrics(step_s: float, batch: int, steps_to_target: int | None, price_per_device_hour: float,
                     devices: int = 1) -> dict[str, float]:
    """samples_per_s, time_to_target_s, cost_to_target and cost_per_million_samples (definitions above)."""
    ### BEGIN SOLUTION
    samples_per_s = devices * batch / step_s
    per_second = devices * price_per_device_hour / 3600  # what the devices cost per second, busy or not
    time_to_target = math.inf if steps_to_target is None else steps_to_target * step_s
    return {"samples_per_s": samples_per_s, "time_to_target_s": time_to_target,
            "cost_to_target": time_to_target * per_second,
            "cost_per_million_samples": 1e6 / samples_per_s * per_second}
    ### END SOLUTION


# %% [markdown]
# **The brief, measured.** The naive job at each world size (measured here: this machine's CPU cores, gloo on
# loopback, one thread per rank), milliseconds per step per rank, and what your `baseline_metrics` makes of
# each world's measured step: samples per second and dollars per million samples at the brief's price.

# %%
brief_runs = lab01.reproduce_brief(pick(full=[1, 2, 4], fast=[1, 2]), global_batch=BRIEF_BATCH,
                                   steps=pick(full=60, fast=40), ckpt_every=10)
brief_table = lab01.brief_table(brief_runs, split_wait, global_batch=BRIEF_BATCH)
display(brief_table)
brief_tp = lab01.throughput(brief_table)
display(pd.DataFrame([{"world": w, **baseline_metrics(BRIEF_BATCH / rate, BRIEF_BATCH // w, None,
                                                       brief["metric"]["price_per_device_hour"], devices=w)}
                      for w, rate in brief_tp.items()]).drop(columns=["time_to_target_s", "cost_to_target"]))
_ax = lab01.plot_brief(brief_table)
brief_kill = lab01.kill_without_checkpoint(kill_step=6, global_batch=BRIEF_BATCH)
display(pd.DataFrame([brief_kill]))
print(f"world 1: {brief_tp[1]:.0f} samples/s, world 2: {brief_tp[2]:.0f} samples/s "
      f"({brief_tp[2] / brief_tp[1]:.2f}x); SIGKILL at step {brief_kill['at step']} without a checkpoint: "
      f"{brief_kill['steps lost']} steps lost")

# %% [markdown]
# **Why world 2 is slower.** Each rank computes on 8 samples instead of 16, but its compute does not halve:
# at so small a batch the AdamW step over *all* parameters and per-operation overheads dominate (compare the
# compute columns). Part of it is this 2-core box, not the method: each rank's compute of its 8 samples took
# 11-14 ms at world 2 against 8.3-8.5 ms for all 16 at world 1 (measured in full mode, min-max over 6
# interleaved rounds at load average < 1), because two ranks plus gloo's threads share two cores; two GPUs
# would not show that, though they would still pay the all-reduces (25-27 ms of transfer per step here). Then
# each rank pays one all-reduce *per parameter tensor* (18 latencies of 2(N−1) ring
# messages, plus the whole gradient's bytes, which do not shrink with N); the other ranks wait for rank 0's
# checkpoint; every collective waits for the slower rank. What is added exceeds what is saved. On NCCL (the
# argument, not a GPU measurement) a per-rank batch of 8 leaves a GPU launch-bound, so the same should hold.
# Losing progress: without a checkpoint a restart begins at step 0, so every step done is lost.

# %% nbgrader={"grade": true, "grade_id": "frame_tests", "locked": true, "points": 10, "schema_version": 3, "solution": false}
# split_wait on a known trace: two groups whose seq numbers coincide, three ranks, rows out of order, one slow
# arrival (rank 1 at seq 1: latest != mean != median != first != last row), a tie for last (group 1), a
# collective only rank 0 entered (group 2), and ranks that leave at different times
calls = pd.DataFrame({"rank": [1, 0, 0, 1, 2, 0, 1, 2, 0], "group": ["0", "0", "0", "0", "0", "1", "1", "1", "2"],
                      "seq": [0, 0, 1, 1, 1, 0, 0, 0, 0],
                      "t_start": [1.3, 1.0, 2.0, 2.9, 2.05, 3.0, 3.2, 3.2, 4.0],
                      "t_end": [1.5, 1.45, 3.0, 3.05, 3.02, 3.5, 3.55, 3.52, 4.2]}, index=[7, 3, 5, 1, 0, 2, 4, 6, 8])
want_split = {"wait_s": [0.0, 0.3, 0.9, 0.0, 0.85, 0.2, 0.0, 0.0, 0.0],
              "transfer_s": [0.2, 0.15, 0.1, 0.15, 0.12, 0.3, 0.35, 0.32, 0.2]}
got = split_wait(calls)
assert list(got.index) == list(calls.index), f"rows and index must be kept: got {list(got.index)}"
for k, v in want_split.items():
    assert all(math.isclose(a, b, abs_tol=1e-12) for a, b in zip(got[k], v, strict=True)), \
        f"split_wait on the known trace: {k} = {got[k].round(6).tolist()}, want {v}"
# ... and on the naive job's real trace at world 2
real = brief_runs[2]["trace"]
live = split_wait(real[real["op"] == "all_reduce"][["rank", "group", "seq", "t_start", "t_end"]])
assert (live["wait_s"] >= -1e-9).all(), f"negative waits on the real trace: {live['wait_s'].min()}"
assert ((live["wait_s"] + live["transfer_s"]) - (live["t_end"] - live["t_start"])).abs().max() < 1e-9, \
    "wait_s + transfer_s must equal t_end - t_start on every call of the real trace"
m = baseline_metrics(step_s=0.02, batch=64, steps_to_target=100, price_per_device_hour=3.6, devices=2)
want = {"samples_per_s": 6400.0, "time_to_target_s": 2.0, "cost_to_target": 0.004,
        "cost_per_million_samples": 0.3125}
for k, v in want.items():
    assert math.isclose(m[k], v, rel_tol=1e-9), f"baseline_metrics(0.02 s, batch 64, 100 steps, 3.6/h, 2): " \
        f"{k} = {m[k]}, want {v}"
m = baseline_metrics(0.5, 8, None, 1.0)
assert m["time_to_target_s"] == math.inf and m["cost_to_target"] == math.inf, \
    f"target never reached: want time_to_target_s = cost_to_target = inf, got {m}"
assert math.isclose(m["cost_per_million_samples"], 1e6 / 16 / 3600, rel_tol=1e-9), \
    f"target never reached: cost_per_million_samples = {m['cost_per_million_samples']}, want {1e6 / 16 / 3600:.6g}"
m0 = baseline_metrics(0.5, 8, 0, 1.0)
assert m0["time_to_target_s"] == 0.0 and m0["cost_to_target"] == 0.0, \
    f"target reached at step 0: want time_to_target_s = cost_to_target = 0, got {m0}"
# the brief, reproduced: the same global batch is slower on two ranks than on one
print(f"measured throughput: world 1 {brief_tp[1]:.1f} samples/s, world 2 {brief_tp[2]:.1f} samples/s")
assert brief_tp[2] < brief_tp[1], \
    f"the naive job should be slower at world 2: world 1 {brief_tp[1]:.1f}, world 2 {brief_tp[2]:.1f} samples/s"
### BEGIN HIDDEN TESTS
from course_dist.evidence import Evidence, grading_seed

ev = Evidence("frame_tests")
rng = random.Random(grading_seed())
ev.close("visible trace", {k: got[k].tolist() for k in want_split}, atol=1e-9)
for i in range(12):  # traces drawn now: 2-4 ranks, 1-3 groups, rows shuffled
    table = lab01.synthetic_calls(rng)
    out = split_wait(table)
    ev.close(f"random trace {i}", {"index": [float(v) for v in out.index],
                                   **{k: out[k].tolist() for k in want_split}}, atol=1e-9)
ev.rule("real trace: smallest wait", float(live["wait_s"].min()), rule="common.ge", bound=-1e-9)
ev.rule("real trace: max |wait + transfer - duration|", float(
    ((live["wait_s"] + live["transfer_s"]) - (live["t_end"] - live["t_start"])).abs().max()),
    rule="common.less_than", bound=1e-9)
ev.close("visible metrics", baseline_metrics(0.02, 64, 100, 3.6, 2), rtol=1e-9)
for i in range(10):
    args = (rng.uniform(0.001, 1.0), rng.randint(1, 512), rng.randint(1, 10_000), rng.uniform(0, 40),
            rng.randint(1, 64))
    ev.close(f"metrics {i}", baseline_metrics(*args), rtol=1e-9)
ev.equal("target not reached", baseline_metrics(0.5, 8, None, 1.0, 3)["cost_to_target"])
ev.close("target not reached: cost per 1M", baseline_metrics(rng.uniform(0.01, 1), 8, None, 1.0, 3)
         ["cost_per_million_samples"], rtol=1e-9)
ev.close("target reached at step 0", baseline_metrics(rng.uniform(0.01, 1), 8, 0, 2.0, 2), rtol=1e-9)
ev.rule("world 2 / world 1 throughput (measured)", brief_tp[2] / brief_tp[1], rule="common.le", bound=1.0)
del ev  # the judge reads the evidence files; nothing here may print a number (partial credit)
### END HIDDEN TESTS

# %% [markdown]
# **The baseline.** One worker (one thread, what each rank of `launch` gets), AdamW, until the training loss
# reaches the brief's target. Every speed-up in this course is a ratio against this row.

# %%
baseline = lab01.measure_baseline(target_loss=brief["metric"]["target_loss"], batch=brief["metric"]["batch"],
                                  max_steps=pick(full=400, fast=300))
base = baseline_metrics(baseline["step_s"], baseline["batch"], baseline["steps_to_target"],
                        brief["metric"]["price_per_device_hour"], devices=1)
display(pd.DataFrame([{"params": baseline["n_params"], "step_s": baseline["step_s"],
                       "steps_to_target": baseline["steps_to_target"], **base}]))
_ax = pd.Series(baseline["losses"]).plot(title="one-worker baseline: training loss", xlabel="step", ylabel="loss")
_ax.axhline(brief["metric"]["target_loss"], ls="--", color="gray")

# %% [markdown]
# ## Exercise 2 — Memory per rank (13 points, ~15 min)
#
# Which resource exceeds its budget? Write the bytes each rank holds for a model of `n_params` parameters
# trained over `world` ranks, split `tp`-way by tensor parallelism and into `pp` pipeline stages, the rest
# data-parallel (`dp = world / (tp * pp)`), optionally with ZeRO stage `zero` over the `dp` ranks:
#
# - **model states**: each parameter costs `param_bytes + grad_bytes + optim_bytes` (mixed-precision Adam:
#   2 + 2 + 12 — the ZeRO paper's K = 12). Model parallelism (`tp * pp`) divides all three. ZeRO-1 divides the
#   optimizer state by `dp`, ZeRO-2 also the gradients, ZeRO-3 also the parameters.
# - **activations**: `act_bytes` is what one micro-batch saves through the whole unsplit model in tensors
#   that tensor parallelism splits; `act_replicated_bytes` what it saves in tensors every TP rank holds whole
#   (replicated at the f/g boundaries: a block's input, for one). A rank holds
#   `(act_bytes / tp + act_replicated_bytes) / pp` per micro-batch in flight; in flight: 1 without a pipeline (`pp == 1`, micro-batches run one after another, whatever the schedule),
#   `micro_batches` under GPipe (all forwards before any backward), `min(micro_batches, pp)` under 1F1B.
# - refuse impossible configurations with `ValueError` naming the numbers: `world` not divisible by
#   `tp * pp`, `pp > layers` (when `layers` is given; `pp == layers` is one layer per stage, allowed), `zero`
#   not in 0..3, a degree or `micro_batches` < 1, an unknown `schedule`.
#
# Return a dict with float values `params`, `grads`, `optimizer`, `activations` and their `total`, unrounded
# (1001 parameters over 2 tensor-parallel ranks are 500.5 each).
#
# Stuck? `hint("lab01.memory")`

# %% nbgrader={"grade": false, "grade_id": "memory_solution", "locked": false, "schema_version": 3, "solution": true}
def memory_per_rank(n_params: int, *, world: int = 1, zero: int = 0, tp: int = 1, pp: int = 1,
                    act_bytes: float = 0.0, act_replicated_bytes: float = 0.0, micro_batches: int = 1,
                    schedule: str = "1f1b", layers: int | None = None, param_bytes: float = 2,
                    grad_bytes: float = 2, optim_bytes: float = 12) -> dict[str, float]:
    """Bytes per rank: params, grads, optimizer, activations, total (rules above)."""
    ### BEGIN SOLUTION
    for name, v in (("world", world), ("tp", tp), ("pp", pp), ("micro_batches", micro_batches)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name} must be an int >= 1, got {v!r}")
    if zero not in (0, 1, 2, 3):
        raise ValueError(f"zero must be 0, 1, 2 or 3, got {zero!r}")
    if world % (tp * pp):
        raise ValueError(f"world = {world} is not divisible by tp * pp = {tp} * {pp} = {tp * pp}")
    if layers is not None and pp > layers:
        raise ValueError(f"pp = {pp} stages for {layers} layers: a stage needs at least one layer")
    if schedule not in ("gpipe", "1f1b"):
        raise ValueError(f"schedule must be 'gpipe' or '1f1b', got {schedule!r}")
    dp = world // (tp * pp)
    local = n_params / (tp * pp)  # model parallelism splits every model state
    params = local * param_bytes / (dp if zero >= 3 else 1)
    grads = local * grad_bytes / (dp if zero >= 2 else 1)
    optimizer = local * optim_bytes / (dp if zero >= 1 else 1)
    in_flight = 1 if pp == 1 else (micro_batches if schedule == "gpipe" else min(micro_batches, pp))
    activations = (act_bytes / tp + act_replicated_bytes) / pp * in_flight
    return {"params": float(params), "grads": float(grads), "optimizer": float(optimizer),
            "activations": float(activations), "total": float(params + grads + optimizer + activations)}
    ### END SOLUTION



# %% nbgrader={"grade": true, "grade_id": "memory_tests", "locked": true, "points": 13, "schema_version": 3, "solution": false}
GB = 1e9
# the ZeRO paper's worked example: 7.5 B parameters, 64 data-parallel ranks, mixed-precision Adam
paper = {0: 120.0, 1: 31.4, 2: 16.6, 3: 1.9}
for z, want in paper.items():
    got = memory_per_rank(7_500_000_000, world=64, zero=z)["total"] / GB
    assert abs(got - want) < 0.05, f"ZeRO-{z}, 7.5 B params, 64 ranks: {got:.2f} GB, the paper says {want} GB"
# fp32 Adam on the lab model, counted from the live tensors after a real AdamW step
live = lab01.measure_state(cfg)
mine = memory_per_rank(live["n_params"], param_bytes=4, grad_bytes=4, optim_bytes=8)
for k in ("params", "grads", "optimizer"):
    assert mine[k] == live[k], f"lab model ({live['n_params']} params, fp32 AdamW): {k} {mine[k]} B, live {live[k]} B"
# tensor and pipeline parallelism, micro-batches and schedules
m = memory_per_rank(1000, world=8, tp=2, pp=2, zero=1, act_bytes=400.0, act_replicated_bytes=100.0,
                    micro_batches=8, schedule="gpipe")
want = {"params": 500.0, "grads": 500.0, "optimizer": 1500.0, "activations": 1200.0, "total": 3700.0}
assert all(math.isclose(m[k], v) for k, v in want.items()), \
    f"world 8, tp 2, pp 2, ZeRO-1, GPipe with 8 micro-batches: {m}, want {want}"
m1 = memory_per_rank(1000, world=8, tp=2, pp=2, zero=1, act_bytes=400.0, act_replicated_bytes=100.0,
                     micro_batches=8, schedule="1f1b")
assert math.isclose(m1["activations"], 300.0), f"same with 1F1B: activations {m1['activations']}, want 300.0"
m2 = memory_per_rank(1000, act_bytes=400.0, micro_batches=8)
assert math.isclose(m2["activations"], 400.0), f"no pipeline, 8 micro-batches: {m2['activations']}, want 400"
m3 = memory_per_rank(1000, act_bytes=400.0, micro_batches=8, schedule="gpipe")
assert math.isclose(m3["activations"], 400.0), \
    f"no pipeline, GPipe named, 8 micro-batches: activations {m3['activations']}, want 400.0 (one in flight)"
m4 = memory_per_rank(1000, world=4, pp=4, layers=4, act_bytes=400.0, micro_batches=2)
assert math.isclose(m4["activations"], 200.0), \
    f"pp 4 = layers 4, 1F1B with 2 micro-batches (fewer than stages): activations {m4['activations']}, want 200.0"
m5 = memory_per_rank(1001, world=4, tp=2, zero=3, param_bytes=2, grad_bytes=2, optim_bytes=12)
want5 = {"params": 500.5, "grads": 500.5, "optimizer": 3003.0, "activations": 0.0, "total": 4004.0}
assert all(isinstance(m5[k], float) and math.isclose(m5[k], v) for k, v in want5.items()), \
    f"1001 params, world 4, tp 2, ZeRO-3: {m5}, want floats {want5}"
# each state at its own byte size (a gradient need not cost what its parameter costs), ZeRO-2 over 4 ranks
m6 = memory_per_rank(1000, world=4, zero=2, param_bytes=4, grad_bytes=2, optim_bytes=12)
want6 = {"params": 4000.0, "grads": 500.0, "optimizer": 3000.0, "activations": 0.0, "total": 7500.0}
assert all(math.isclose(m6[k], v) for k, v in want6.items()), \
    f"1000 params, param_bytes 4, grad_bytes 2, optim_bytes 12, world 4, ZeRO-2: {m6}, want {want6}"
# every edge of every refusal: tp * pp must divide world (12 splits by 2 and by 4 but not by 2 * 4 = 8), zero
# below 0 as well as above 3
for bad, numbers in ((dict(world=6, tp=4), ("6", "4")), (dict(world=12, tp=2, pp=4), ("12",)),
                     (dict(world=4, pp=4, layers=2), ("4", "2")), (dict(zero=4), ("4",)), (dict(zero=-1), ("-1",)),
                     (dict(micro_batches=0), ("0",)), (dict(tp=0), ("0",)), (dict(schedule="zb-v"), ("zb-v",))):
    try:
        memory_per_rank(1000, **bad)
        raise AssertionError(f"memory_per_rank(1000, {bad}) must raise ValueError")
    except ValueError as exc:
        assert all(n in str(exc) for n in numbers), f"{bad}: the message must name {numbers}: {exc}"
### BEGIN HIDDEN TESTS
from course_dist.evidence import Evidence, grading_seed

ev = Evidence("memory_tests")
rng = random.Random(grading_seed() + 2)
ev.close("ZeRO paper", [memory_per_rank(7_500_000_000, world=64, zero=z)["total"] for z in range(4)], rtol=1e-9)
ev.close("live fp32 adam", {k: float(mine[k]) for k in ("params", "grads", "optimizer")}, rtol=0.0)
for k, v in (("gpipe no pipeline", m3), ("1f1b m < pp = layers", m4), ("unrounded floats", m5),
             ("own byte sizes", m6)):
    ev.close(f"visible {k}", v, rtol=1e-9)
ev.close("pp = layers, drawn", memory_per_rank(1000, world=8, pp=8, layers=8, act_bytes=float(rng.randint(1, 999)),
                                               micro_batches=rng.randint(1, 7)), rtol=1e-9)
ev.close("visible gpipe", m, rtol=1e-9)
ev.close("visible 1f1b", m1, rtol=1e-9)
for i in range(25):
    tp, pp = rng.choice([1, 2, 4]), rng.choice([1, 2, 4])
    kw = dict(world=tp * pp * rng.choice([1, 2, 8]), tp=tp, pp=pp, zero=rng.randint(0, 3),
              act_bytes=float(rng.randint(0, 10**6)), act_replicated_bytes=float(rng.randint(0, 10**5)),
              micro_batches=rng.randint(1, 12), schedule=rng.choice(["gpipe", "1f1b"]), layers=8,
              param_bytes=rng.choice([2, 4]), grad_bytes=rng.choice([2, 4]), optim_bytes=rng.choice([8, 12]))
    ev.close(f"random config {i}: {kw}", memory_per_rank(rng.randint(10**6, 10**10), **kw), rtol=1e-9)


def refused(**kw):
    try:
        memory_per_rank(1000, **kw)
        return "accepted"
    except ValueError:
        return "ValueError"


for kw in (dict(world=6, tp=4), dict(world=12, tp=2, pp=4), dict(world=4, pp=4, layers=2), dict(zero=4),
           dict(zero=-1), dict(micro_batches=0), dict(schedule="zb-v"), dict(world=8, tp=2, pp=4, layers=4)):
    ev.equal(f"refuses {kw}", refused(**kw))
del ev  # the judge reads the evidence files; nothing here may print a number (partial credit)
### END HIDDEN TESTS

# %% [markdown]
# What fits where: the lab model and a 7 B-parameter model under each strategy, bytes per rank.

# %%
# the lab model's activations at the brief's batch, measured by a saved-tensor ledger (what autograd keeps)
n_lab, act_lab = live["n_params"], lab01.measure_activations([brief["metric"]["batch"]], cfg)[0]["saved_bytes"]
rows = []
for label, n, kw in [("lab model, fp32 Adam, 1 rank", n_lab, dict(param_bytes=4, grad_bytes=4, optim_bytes=8)),
                     ("7 B, DDP x 8", 7e9, dict(world=8)), ("7 B, ZeRO-1 x 8", 7e9, dict(world=8, zero=1)),
                     ("7 B, ZeRO-3 x 8", 7e9, dict(world=8, zero=3)), ("7 B, TP 8", 7e9, dict(world=8, tp=8)),
                     ("7 B, PP 4 x DP 2, 1F1B", 7e9, dict(world=8, pp=4, layers=32, micro_batches=8))]:
    rows.append({"configuration": label, **{k: v / GB for k, v in memory_per_rank(int(n), **kw).items()}})
display(pd.DataFrame(rows).set_index("configuration").rename(columns=lambda c: f"{c} (GB)"))

# %% [markdown]
# ## Exercise 3 — Communication cost (20 points, ~20 min)
#
# The α–β model of one collective of `S` bytes over `N` ranks on a ring:
# `t = steps(N) * alpha + bus_factor(N) * S * beta`, where `alpha` is the latency of one message and `beta`
# the seconds per byte on the bus. `lab01.ring_constants(collective, N)` returns `(steps, bus_factor)`:
# all_reduce `(2(N-1), 2(N-1)/N)`, all_gather and reduce_scatter `(N-1, (N-1)/N)` (S = the full gathered
# tensor), broadcast and send/recv `(1, 1)`. Fitting `beta` on the *algorithm* bytes `S` instead of the bus
# bytes `bus_factor * S` is the classic mistake: it makes the same link look slower as `N` grows.
#
# 1. `fit_alpha_beta(sizes, times, collective, world)`: ordinary least squares of `times` on the bus bytes
#    `bus_factor * S` with an intercept (e.g. `numpy.polyfit(x, t, 1)`); `beta` is the slope, `alpha` the
#    intercept divided by `steps`. Fewer than 2 distinct sizes → `ValueError` naming the count (2 suffice).
# 2. `ddp_step_time(compute_s, grad_bytes, world, alpha, beta)`: one DDP step without overlap, compute then
#    one ring all-reduce of the gradients: `compute_s` at `world == 1`, else `compute_s + 2(N-1)*alpha +
#    2(N-1)/N * grad_bytes * beta`. `world < 1` → `ValueError` naming it.
# 3. `dp_break_even_batch(sample_s, grad_bytes, world, alpha, beta)`: the smallest per-rank batch `b` at which
#    `world` ranks (each computing `b * sample_s`, then the all-reduce) process more samples per second than
#    one rank alone at the same per-rank batch; `world < 2` → `ValueError` naming it (world 2 has one).
#
# The fit is graded on synthetic timings with a known α, β and noise (also repeated timings of each size with
# one outlier among them, and one size timed more often than the others: least squares over every timing, not
# a median or mean per size or a pair of points), then applied to
# collectives measured through `launch` on this machine (also through only the smallest and largest all_reduce
# size), to the break-even batch at world 2 and to the simulated world-2 step.
#
# Stuck? `hint("lab01.comm")`

# %% nbgrader={"grade": false, "grade_id": "comm_solution", "locked": false, "schema_version": 3, "solution": true}
def fit_alpha_beta(sizes: list[float], times: list[float], collective: str, world: int) -> tuple[float, float]:
    """(alpha seconds per message, beta seconds per bus byte) fitted to ``times`` measured at ``sizes``."""
    ### BEGIN SOLUTION
    import numpy as np

    if len(set(sizes)) < 2:
        raise ValueError(f"need at least 2 distinct message sizes to fit a line, got {len(set(sizes))}")
    steps, factor = lab01.ring_constants(collective, world)
    x = factor * np.asarray(sizes, dtype=np.float64)  # bus bytes: what each rank actually sends
    slope, intercept = np.polyfit(x, np.asarray(times, dtype=np.float64), 1)
    return float(intercept / steps), float(slope)
    ### END SOLUTION


def ddp_step_time(compute_s: float, grad_bytes: float, world: int, alpha: float, beta: float) -> float:
    """Seconds per DDP step: compute, then a ring all-reduce of ``grad_bytes`` (none at world 1)."""
    ### BEGIN SOLUTION
    if world < 1:
        raise ValueError(f"world must be >= 1, got {world!r}")
    if world == 1:
        return float(compute_s)
    return float(compute_s + 2 * (world - 1) * alpha + 2 * (world - 1) / world * grad_bytes * beta)
    ### END SOLUTION


def dp_break_even_batch(sample_s: float, grad_bytes: float, world: int, alpha: float, beta: float) -> float:
    """Smallest per-rank batch at which ``world`` data-parallel ranks out-run one rank."""
    ### BEGIN SOLUTION
    if world < 2:
        raise ValueError(f"break-even needs world >= 2, got {world!r}")
    comm = ddp_step_time(0.0, grad_bytes, world, alpha, beta)
    # world * b / (b * sample_s + comm) > b / (b * sample_s)  <=>  b > comm / ((world - 1) * sample_s)
    return float(comm / ((world - 1) * sample_s))
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "comm_tests", "locked": true, "points": 13, "schema_version": 3, "solution": false}
sizes = [2**k for k in range(10, 23, 2)]
for coll, world in (("all_reduce", 4), ("all_gather", 8), ("broadcast", 2)):
    a, b = fit_alpha_beta(sizes, lab01.synthetic(coll, world, 50e-6, 1e-9, sizes), coll, world)
    assert math.isclose(a, 50e-6, rel_tol=1e-6) and math.isclose(b, 1e-9, rel_tol=1e-6), \
        f"{coll} at world {world}, noise-free, alpha 5e-05 s, beta 1e-09 s/B: fitted alpha {a:.4g}, beta {b:.4g}"
noisy = lab01.synthetic("reduce_scatter", 4, 2e-4, 3e-10, sizes, noise=0.02, seed=3)
a, b = fit_alpha_beta(sizes, noisy, "reduce_scatter", 4)
assert abs(a - 2e-4) < 0.1 * 2e-4 and abs(b - 3e-10) < 0.1 * 3e-10, \
    f"reduce_scatter world 4, 2 % noise, alpha 2e-04, beta 3e-10: fitted alpha {a:.4g}, beta {b:.4g}"
try:
    fit_alpha_beta([1024, 1024], [1e-3, 1.1e-3], "all_reduce", 2)
    raise AssertionError("one distinct size must raise ValueError")
except ValueError as exc:
    assert "1" in str(exc), f"the message must name the count 1, got: {exc}"
t = ddp_step_time(0.1, 1e8, 4, 1e-4, 1e-9)
assert math.isclose(t, 0.1 + 6e-4 + 0.15), f"ddp_step_time(0.1 s, 1e8 B, world 4, 1e-4, 1e-9) = {t}, want 0.2506"
assert ddp_step_time(0.1, 1e8, 1, 1e-4, 1e-9) == 0.1, \
    f"ddp_step_time(0.1 s, 1e8 B, world 1, ...) = {ddp_step_time(0.1, 1e8, 1, 1e-4, 1e-9)}, want 0.1 (no all-reduce)"
b_star = dp_break_even_batch(1e-3, 1e8, 4, 1e-4, 1e-9)
assert math.isclose(b_star, (6e-4 + 0.15) / 3e-3), f"break-even batch at world 4: {b_star}, want 50.2"
b_two = dp_break_even_batch(1e-3, 1e8, 2, 1e-4, 1e-9)
assert math.isclose(b_two, (2e-4 + 0.1) / 1e-3), f"break-even batch at world 2: {b_two}, want 100.2"
a, b = fit_alpha_beta([1024, 4096], lab01.synthetic("all_reduce", 2, 50e-6, 1e-9, [1024, 4096]), "all_reduce", 2)
assert math.isclose(a, 50e-6, rel_tol=1e-6) and math.isclose(b, 1e-9, rel_tol=1e-6), \
    f"exactly 2 distinct sizes are enough: fitted alpha {a:.4g}, beta {b:.4g}, want 5e-05 and 1e-09"
# 3 timings per size, one outlier each (residuals 2d, -d, -d: mean 0, median -d): least squares over every timing
# recovers alpha and beta exactly; a median per size or a line through two of the points does not
rep = [1024] * 3 + [4096] * 3
rep_t = [t + e for t, e in zip(lab01.synthetic("all_reduce", 2, 50e-6, 1e-9, rep), [2e-5, -1e-5, -1e-5] * 2,
                               strict=True)]
a, b = fit_alpha_beta(rep, rep_t, "all_reduce", 2)
assert math.isclose(a, 50e-6, rel_tol=1e-6) and math.isclose(b, 1e-9, rel_tol=1e-6), \
    f"all_reduce world 2, sizes {rep}, one outlier per size: least squares gives alpha 5e-05, beta 1e-09; " \
    f"fitted alpha {a:.6g}, beta {b:.6g}"
# one size timed twice, the others once (as the measurement below does): least squares weights every timing,
# a mean or median per size weights each size once (residuals 6, 6, -15, 3 us: least squares gives them exactly)
unb = [1024, 1024, 4096, 16384]
unb_t = [t + 1e-6 * e for t, e in zip(lab01.synthetic("all_reduce", 2, 50e-6, 1e-9, unb), [6, 6, -15, 3],
                                      strict=True)]
a, b = fit_alpha_beta(unb, unb_t, "all_reduce", 2)
assert math.isclose(a, 50e-6, rel_tol=1e-6) and math.isclose(b, 1e-9, rel_tol=1e-6), \
    f"all_reduce world 2, sizes {unb} (1024 timed twice): least squares over every timing gives alpha 5e-05, " \
    f"beta 1e-09; fitted alpha {a:.6g}, beta {b:.6g}"
for fn, args, bad in ((ddp_step_time, (0.1, 1e8, 0, 1e-4, 1e-9), "0"), (dp_break_even_batch, (1e-3, 1e8, 1, 1e-4, 1e-9), "1")):
    try:
        fn(*args)
        raise AssertionError(f"{fn.__name__} at world {bad} must raise ValueError")
    except ValueError as exc:
        assert bad in str(exc), f"{fn.__name__} at world {bad}: the message must name {bad}, got: {exc}"
### BEGIN HIDDEN TESTS
from course_dist.evidence import Evidence, grading_seed

ev = Evidence("comm_tests")
rng = random.Random(grading_seed() + 3)
for coll, world in (("all_reduce", 4), ("all_gather", 8), ("broadcast", 2)):
    ev.close(f"visible noise-free {coll} world {world}",
             list(fit_alpha_beta(sizes, lab01.synthetic(coll, world, 50e-6, 1e-9, sizes), coll, world)),
             rtol=1e-6)
ev.close("visible noisy reduce_scatter", list(fit_alpha_beta(sizes, noisy, "reduce_scatter", 4)), rtol=1e-6)
for i in range(12):
    coll, world = rng.choice(lab01.COLLECTIVES), rng.choice([2, 3, 4, 8, 16])
    al, be = 10 ** rng.uniform(-6, -3), 10 ** rng.uniform(-11, -8)
    sz = sorted(rng.sample(sizes + [3 * s for s in sizes], rng.randint(3, 9)))
    times = lab01.synthetic(coll, world, al, be, sz, noise=rng.choice([0.0, 0.02, 0.1]), seed=rng.randint(0, 99))
    ev.close(f"synthetic {i}: {coll} world {world}", list(fit_alpha_beta(sz, times, coll, world)), rtol=1e-6,
             atol=1e-15)
for i in range(10):
    args = (rng.uniform(0, 1), rng.uniform(1e5, 1e10), rng.randint(1, 64), rng.uniform(0, 1e-3),
            rng.uniform(1e-11, 1e-8))
    ev.close(f"step time {i}", ddp_step_time(*args), rtol=1e-9)
    if args[2] > 1:  # one worker has no break-even batch (nothing to amortize): no key for it
        ev.close(f"break-even {i}", dp_break_even_batch(args[0] / 100 + 1e-6, *args[1:]), rtol=1e-9)
ev.equal("step time world 1", ddp_step_time(0.3, 1e9, 1, 1e-3, 1e-9))
ev.close("break-even world 2", dp_break_even_batch(rng.uniform(1e-4, 1e-2), 1e8, 2, 1e-4, 1e-9), rtol=1e-9)
two = [rng.choice(sizes), 3 * rng.choice(sizes)]
ev.close("visible outliers per size", list(fit_alpha_beta(rep, rep_t, "all_reduce", 2)), rtol=1e-6)
ev.close("visible unbalanced repeats", list(fit_alpha_beta(unb, unb_t, "all_reduce", 2)), rtol=1e-6)
# every seed: 4 timings of each of 2 drawn sizes, one outlier per size (residuals 3s, -s, -s, -s)
spread, rep_h = rng.uniform(0.1, 0.5), [rng.choice(sizes)] * 4 + [5 * rng.choice(sizes)] * 4
rep_ht = [t * (1 + e) for t, e in zip(lab01.synthetic("all_gather", 4, 1e-4, 2e-9, rep_h),
                                      [3 * spread, -spread, -spread, -spread] * 2, strict=True)]
ev.close("drawn outlier per size", list(fit_alpha_beta(rep_h, rep_ht, "all_gather", 4)), rtol=1e-6, atol=1e-15)
ev.close("two distinct sizes", list(fit_alpha_beta(two, lab01.synthetic("broadcast", 2, 1e-4, 2e-9, two), "broadcast",
                                                   2)), rtol=1e-6)
del ev  # the judge reads the evidence files; nothing here may print a number (partial credit)
### END HIDDEN TESTS

# %% [markdown]
# **Measure.** Every collective at world 2 on this machine (one launch). The fit uses the sizes marked
# `fit`; the `held out` sizes, inside the fitted range, test its predictions (a line fitted up to 4 MB says
# nothing about 6 MB). The smallest size is measured twice, as two separate estimates: a repeated size, as in
# the exercise, and least squares uses both.

# %%
fit_sizes = pick(full=[2**k for k in range(10, 24, 2)], fast=[2**12, 2**16, 2**19, 2**21])
held_out = pick(full=[3 * 2**15, 3 * 2**19, 3 * 2**20], fast=[3 * 2**17])
meas = lab01.measure_collectives(fit_sizes[:1] + fit_sizes + held_out, world=2, reps=pick(full=9, fast=5))
shard = [b // 2 if c in ("all_gather", "reduce_scatter") else b
         for c, b in zip(meas["collective"], meas["bytes"], strict=True)]
meas["set"] = ["held out" if s in held_out else "fit" for s in shard]
fits, pred = {}, []
for coll, g in meas.groupby("collective"):
    f = g[g["set"] == "fit"]
    fits[coll] = fit_alpha_beta(f["bytes"].tolist(), f["time_s"].tolist(), coll, 2)
for _, row in meas.iterrows():
    steps_, factor = lab01.ring_constants(row["collective"], 2)
    a, b = fits[row["collective"]]
    pred.append(steps_ * a + factor * row["bytes"] * b)
meas["predicted_s"] = pred
meas["error"] = (meas["predicted_s"] - meas["time_s"]).abs() / meas["time_s"]
fit_table = pd.DataFrame([{"collective": c, "alpha (us)": a * 1e6, "bus GB/s": 1e-9 / b if b > 0 else math.nan,
                           "held-out error (median)": meas[(meas["collective"] == c) & (meas["set"] == "held out")]
                           ["error"].median()} for c, (a, b) in fits.items()])
display(fit_table)
_ax = lab01.plot_alpha_beta(meas)

# %% [markdown]
# **Are eight workers slower than one? (simulated)** Not measured: `ddp_step_time` evaluated for 1–8 ranks,
# calibrated on this machine — the baseline's measured compute per sample (one CPU thread) and the world-2
# gloo all-reduce fit over loopback. The lab model's fp32 gradients, the baseline's global batch of 64
# (`brief["metric"]["batch"]`, not the naive job's 16 of exercise 1, whose split would save each rank a quarter
# of this compute) split over `N` ranks (strong scaling), no overlap. Exercise 1 measured world 1 and 2;
# everything beyond is extrapolated.

# %%
a_ar, b_ar = fits["all_reduce"]
sample_s = baseline["step_s"] / baseline["batch"]
grad_bytes = 4 * n_lab
global_batch = brief["metric"]["batch"]
SIM = "simulated: CPU gloo world-2 fit"  # the label every extrapolated figure carries
scaling = pd.DataFrame([{"world": n, "step_s": ddp_step_time(sample_s * global_batch / n, grad_bytes, n, a_ar,
                                                              b_ar)} for n in range(1, 9)])
scaling["samples_per_s"] = global_batch / scaling["step_s"]
scaling["speed-up vs 1"] = scaling["samples_per_s"] / scaling["samples_per_s"].iloc[0]
display(scaling.rename(columns=lambda c: c if c == "world" else f"{c} ({SIM})"))
_ax = lab01.plot_scaling_prediction(scaling)
b_even = dp_break_even_batch(sample_s, grad_bytes, 8, a_ar, b_ar)
print(f"simulated ({SIM}): 8 ranks faster than 1 at the baseline's global batch {global_batch}? "
      f"{bool(scaling['samples_per_s'].iloc[7] > scaling['samples_per_s'].iloc[0])}; "
      f"data parallelism at world 8 pays from {b_even:.0f} samples per rank (compute per byte "
      f"{sample_s * b_even / grad_bytes * 1e9:.3g} ns/B)")

# %% nbgrader={"grade": true, "grade_id": "comm_real_tests", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# The fit applied to this machine's measurements (checked against your own measurements, not ours).
assert sorted(fits) == sorted(lab01.COLLECTIVES), f"fits for {sorted(fits)}, want {sorted(lab01.COLLECTIVES)}"
assert all(math.isfinite(a) and math.isfinite(b) for a, b in fits.values()), f"non-finite fit: {fits}"
# least squares over your own timings (the smallest size twice): every line's residuals sum to 0 and are
# uncorrelated with the bus bytes (the normal equations)
for coll, (a, b) in fits.items():
    f = meas[(meas["collective"] == coll) & (meas["set"] == "fit")]
    steps_, factor = lab01.ring_constants(coll, 2)
    x, t = [factor * float(v) for v in f["bytes"]], [float(v) for v in f["time_s"]]
    res = [ti - steps_ * a - xi * b for xi, ti in zip(x, t, strict=True)]
    r0, r1 = sum(res), sum(xi * ri for xi, ri in zip(x, res, strict=True))
    assert abs(r0) <= 1e-6 * sum(t) and abs(r1) <= 1e-6 * sum(xi * ti for xi, ti in zip(x, t, strict=True)), \
        f"{coll}: alpha {a:.6g}, beta {b:.6g} is not the least-squares line of your {len(t)} timings: residuals " \
        f"sum to {r0:.3g} s and {r1:.3g} s*B against the bus bytes, want 0 and 0"
# two distinct sizes are enough for a line: all_reduce fitted on its smallest and largest measured size only
ar = meas[(meas["collective"] == "all_reduce") & (meas["set"] == "fit")]
ends = ar[ar["bytes"].isin([ar["bytes"].min(), ar["bytes"].max()])]
two_fit = fit_alpha_beta(ends["bytes"].tolist(), ends["time_s"].tolist(), "all_reduce", 2)
assert all(math.isfinite(v) for v in two_fit), f"all_reduce fitted on 2 distinct sizes: {two_fit}, want finite"
# ... and the repeated timings of one size alone are no line at all
one = ar[ar["bytes"] == ar["bytes"].min()]


def one_size_fit() -> str:
    try:
        fit_alpha_beta(one["bytes"].tolist(), one["time_s"].tolist(), "all_reduce", 2)
    except ValueError as exc:
        return f"ValueError: {exc}"
    return "accepted"


assert one_size_fit().startswith("ValueError"), \
    f"{len(one)} all_reduce timings of one size must raise ValueError, got {one_size_fit()}"
# the break-even per-rank batch at world 2, from this machine's fit (the smallest world that has one)
b_even2 = dp_break_even_batch(sample_s, grad_bytes, 2, a_ar, b_ar)
assert math.isfinite(b_even2), f"break-even batch at world 2 from the measured fit: {b_even2}, want finite"
# the simulated scaling table is your ddp_step_time on this machine's numbers: at world 2, the measured compute
# of global_batch / 2 samples, then one all-reduce of the gradients (2 alpha + grad_bytes * beta)
step2, compute2 = float(scaling["step_s"].iloc[1]), sample_s * global_batch / 2
want2 = compute2 + 2 * a_ar + grad_bytes * b_ar
assert math.isclose(step2, want2, rel_tol=1e-9), \
    f"simulated step at world 2: {step2:.6g} s, want compute {compute2:.6g} s + all-reduce " \
    f"{2 * a_ar + grad_bytes * b_ar:.6g} s = {want2:.6g} s"
print(f"all_reduce alpha, beta: all sizes {fits['all_reduce']}, 2 sizes {two_fit}; "
      f"break-even at world 2: {b_even2:.0f} samples per rank ({SIM})")
### BEGIN HIDDEN TESTS
from course_dist.evidence import Evidence

ev = Evidence("comm_real_tests")
fitrows = meas[meas["set"] == "fit"]
ev.rule("real fits", {c: {"bytes": [float(v) for v in g["bytes"]], "time_s": [float(v) for v in g["time_s"]],
                          "alpha": fits[c][0], "beta": fits[c][1]} for c, g in fitrows.groupby("collective")},
        rule="lab01.fits_match", world=2, rtol=1e-6)
ev.rule("two-size fit", {"all_reduce": {"bytes": [float(v) for v in ends["bytes"]],
                                        "time_s": [float(v) for v in ends["time_s"]],
                                        "alpha": two_fit[0], "beta": two_fit[1]}},
        rule="lab01.fits_match", world=2, rtol=1e-6)
ev.equal("one measured size", one_size_fit().split(":")[0])
ev.rule("break-even at world 2", {"sample_s": float(sample_s), "grad_bytes": float(grad_bytes), "world": 2,
                                  "alpha": float(a_ar), "beta": float(b_ar), "batch": float(b_even2)},
        rule="lab01.break_even_matches", rtol=1e-9)
for n in (1, 2, 8):  # the simulated scaling table at world 1 (no all-reduce), 2 and 8
    ev.rule(f"simulated step at world {n}", {"compute_s": float(sample_s * global_batch / n),
                                             "grad_bytes": float(grad_bytes), "world": n, "alpha": float(a_ar),
                                             "beta": float(b_ar), "step_s": float(scaling["step_s"].iloc[n - 1])},
            rule="lab01.step_time_matches", rtol=1e-9)
del ev  # the judge reads the evidence files; nothing here may print a number (partial credit)
### END HIDDEN TESTS

# %% [markdown]
# **Written (4 points).** From the fit table and the scaling prediction: quote α and the bus bandwidth of
# all_reduce on this machine and the held-out prediction error; explain in one or two sentences where the
# predicted throughput peaks (it is simulated: say so, and from which measurements) and why it falls beyond
# that world size, and what per-rank batch (or compute per byte) would make data parallelism pay at world 8.

# %% [markdown] nbgrader={"grade": true, "grade_id": "comm_written", "locked": false, "points": 4, "schema_version": 3, "solution": true}
# === BEGIN MARK SCHEME ===
# Quotes the measured all_reduce alpha (tens to hundreds of us on gloo/CPU) and bus bandwidth (~0.5-1 GB/s) and
# the held-out error (target <= 20 %).
# Explains: the all-reduce of the full gradient (bytes independent of N, ~2x S on the bus) plus 2(N-1) alphas
# grows while compute per rank shrinks (strong scaling), so comm > compute saved; quotes the break-even per-rank
# batch (hundreds to thousands of samples here) or the compute/byte ratio; mentions overlap would help;
# labels the scaling figures as simulated (calibrated by the world-2 gloo fit on this CPU box).
# === END MARK SCHEME ===

# %% [markdown]
# ## Exercise 4 — Tensor parallel (20 points, ~20 min)
#
# Megatron's split of an MLP block across `N` ranks: the first Linear is **column-parallel** (rank `r` holds
# output features `[r*k, (r+1)*k)` of the weight and bias, `k = out_features / N`), the second is
# **row-parallel** (rank `r` holds input features `[r*k, (r+1)*k)` of the weight, and the *whole* bias, added
# once after the reduction). Two conjugate autograd functions glue them:
# - **f** (`CopyToTP`): identity forward; all-reduce (sum) of the gradient backward — every rank used the
#   same input, so its gradient is the sum of the ranks' partial gradients;
# - **g** (`ReduceFromTP`): all-reduce (sum) forward — the row-parallel partial products add up — and identity
#   backward.
#
# `ColumnParallelLinear(dense)` and `RowParallelLinear(dense)` take a dense `nn.Linear` and keep this rank's
# slice as their own `nn.Parameter`s `weight` and `bias` (copies: an optimizer step on them leaves the dense
# layer as it was); a feature count not divisible by the world size raises `ValueError` naming it and the
# world size. Column's forward is
# `linear(f(x), weight, bias)`; row's is `g(linear(x_shard, weight)) + bias`. One block therefore costs one
# all-reduce forward and one backward. The test splits a block at world 2 and compares its output, the input's
# gradient and every local gradient with the dense block (and with torch's `ColwiseParallel` →
# `RowwiseParallel` on the same weights), within 1e-5, counts the all-reduces in the `launch` trace, and takes
# one SGD step on your parameters to see that the dense layers did not move and that what each rank holds
# afterwards (and the block's output) equals the dense block, and torch's TP, after the same step: the
# optimizer moves every copy of a parameter by its full gradient, so *which rank holds what* shows there
# even where the forward and the gradients agree.
#
# Stuck? `hint("lab01.tp")`

# %% nbgrader={"grade": false, "grade_id": "tp_solution", "locked": false, "schema_version": 3, "solution": true}
class CopyToTP(torch.autograd.Function):
    """f: identity forward, all-reduce (sum) backward."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        ### BEGIN SOLUTION
        return x.view_as(x)
        ### END SOLUTION

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        ### BEGIN SOLUTION
        grad = grad.contiguous().clone()  # never reduce autograd's buffer in place
        dist.all_reduce(grad)
        return grad
        ### END SOLUTION


class ReduceFromTP(torch.autograd.Function):
    """g: all-reduce (sum) forward, identity backward."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        ### BEGIN SOLUTION
        x = x.contiguous().clone()
        dist.all_reduce(x)
        return x
        ### END SOLUTION

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        ### BEGIN SOLUTION
        return grad
        ### END SOLUTION


def _shard_size(features: int, what: str) -> int:
    """Features per rank; ValueError when ``features`` does not split evenly over the world."""
    ### BEGIN SOLUTION
    world = dist.get_world_size()
    if features % world:
        raise ValueError(f"{what} = {features} is not divisible by the world size {world}")
    return features // world
    ### END SOLUTION


class ColumnParallelLinear(nn.Module):
    """This rank's block of output features of ``dense``; forward ``linear(f(x), weight, bias)``."""

    def __init__(self, dense: nn.Linear) -> None:
        super().__init__()
        ### BEGIN SOLUTION
        k, r = _shard_size(dense.out_features, "out_features"), dist.get_rank()
        self.weight = nn.Parameter(dense.weight.detach()[r * k:(r + 1) * k].clone())
        self.bias = nn.Parameter(dense.bias.detach()[r * k:(r + 1) * k].clone())
        ### END SOLUTION

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ### BEGIN SOLUTION
        return nn.functional.linear(CopyToTP.apply(x), self.weight, self.bias)
        ### END SOLUTION


class RowParallelLinear(nn.Module):
    """This rank's block of input features of ``dense`` and the whole bias; forward
    ``g(linear(x_shard, weight)) + bias``."""

    def __init__(self, dense: nn.Linear) -> None:
        super().__init__()
        ### BEGIN SOLUTION
        k, r = _shard_size(dense.in_features, "in_features"), dist.get_rank()
        self.weight = nn.Parameter(dense.weight.detach()[:, r * k:(r + 1) * k].clone())
        self.bias = nn.Parameter(dense.bias.detach().clone())  # added once, after the sum
        ### END SOLUTION

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ### BEGIN SOLUTION
        return ReduceFromTP.apply(nn.functional.linear(x, self.weight)) + self.bias
        ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "tp_tests", "locked": true, "points": 20, "schema_version": 3, "solution": false}
def check_tp(world, d_model, d_hidden, tol=1e-5, refuse=None):
    res = launch(lab01.compare_rank, world_size=world, args=(ColumnParallelLinear, RowParallelLinear, d_model,
                                                             d_hidden), kwargs={"refuse": refuse}, trace=True,
                 timeout=60)
    k = d_hidden // world
    for r, out in enumerate(res):
        where = f"world {world}, rank {r}, block {d_model}->{d_hidden}->{d_model}"
        assert out["shapes"] == {"column.weight": [k, d_model], "row.weight": [d_model, k]}, \
            f"{where}: local weight shapes {out['shapes']}, want column [{k}, {d_model}] and row [{d_model}, {k}]"
        assert out["output"] < tol, f"{where}: output differs from the dense block by {out['output']:.3g} (want < {tol:g})"
        assert out["input_grad"] < tol, \
            f"{where}: input gradient differs from dense by {out['input_grad']:.3g} (want < {tol:g})"
        for name, err in out["grads"].items():
            assert err < tol, f"{where}: {name} gradient differs from the dense slice by {err:.3g} (want < {tol:g})"
        for name, err in out["after_step"].items():  # which rank holds what, seen after an update
            assert err < tol, \
                f"{where}: after one SGD step (lr 0.5) on the TP parameters and on the dense block, {name} differs " \
                f"from the dense block's by {err:.3g} (want < {tol:g}: each rank holds exactly its slice, the row " \
                "bias whole, so every copy moves as the dense parameter does)"
        for name, err in out["vs_torch"].items():
            assert err < tol, \
                f"{where}: {name} differs from torch ColwiseParallel/RowwiseParallel by {err:.3g} (want < {tol:g})"
        assert out["dense_moved"] == 0.0, \
            f"{where}: an SGD step on the TP parameters moved the dense layer by {out['dense_moved']:.3g}, want 0 " \
            "(the shards must be copies, not views)"
        n_ar = lab01.count_in_window(res.trace, r, out["window"])
        assert n_ar == 2, f"{where}: {n_ar} all_reduce calls in one forward+backward, want 2 (g forward, f backward)"
    return res


tp_res = check_tp(2, 16, 32, refuse=(5, 7))  # also builds both classes from nn.Linear(5, 7): must refuse
for name, msg in tp_res[0]["refusals"].items():
    feats = "7" if name == "column" else "5"
    assert msg is not None and feats in msg and "2" in msg, \
        f"{name}-parallel Linear(5, 7) at world 2 must raise ValueError naming {feats} and 2, got {msg!r}"
### BEGIN HIDDEN TESTS
from course_dist.evidence import Evidence

ev = Evidence("tp_tests")


def tp_evidence(ev, res, world):
    for r, out in enumerate(res):
        ev.close(f"world {world} rank {r} max diffs", {"output": out["output"], "input_grad": out["input_grad"],
                                                       **out["grads"], **out["vs_torch"]}, atol=1e-5)
        ev.equal(f"world {world} rank {r} shapes", out["shapes"])
        ev.equal(f"world {world} rank {r} dense moved by a step", out["dense_moved"])
        ev.close(f"world {world} rank {r} after a step", out["after_step"], atol=1e-5)
        ev.equal(f"world {world} rank {r} all-reduces", lab01.count_in_window(res.trace, r, out["window"]))


tp_evidence(ev, tp_res, 2)
ev.rule("refusals name the numbers", list(tp_res[0]["refusals"].values()), rule="common.contains", needles=["7", "5"])
ev.rule("refusals name the world", list(tp_res[0]["refusals"].values()), rule="common.contains", needles=["2", "2"])
for world in pick(full=[3, 4], fast=[3]):
    tp_evidence(ev, launch(lab01.compare_rank, world_size=world, args=(ColumnParallelLinear, RowParallelLinear, 12,
                                                                   24 * world), trace=True, timeout=60), world)
del ev  # the judge reads the evidence files; nothing here may print a number (partial credit)
### END HIDDEN TESTS

# %% [markdown]
# Each MLP block costs one all-reduce of a `batch x d_model` activation per direction (g forward, f
# backward: two per step), whatever the hidden width; a transformer layer (attention + MLP) two per direction,
# four per step, all on the critical path. That is why tensor parallelism lives *inside* a node, on the
# fastest link. The table (simulated, with the world-2 gloo fit of this CPU machine) prices one block's
# forward + backward all-reduces and compares them with the compute the split saves (measured baseline / t).

# %%
act_boundary = 4 * brief["metric"]["batch"] * cfg.d_model  # one all-reduced activation, fp32
block_compute = baseline["step_s"] / cfg.layers
display(pd.DataFrame([{"tp": t, f"compute saved per block (s, {SIM})": block_compute * (1 - 1 / t),
                       f"1 all-reduce fwd + 1 bwd per block (s, {SIM})":
                           2 * ddp_step_time(0.0, act_boundary, t, a_ar, b_ar)} for t in (2, 4, 8)]))
# what a TP rank keeps whole: every block's input, the head's input and the loss's log-softmax (not split)
act_replicated = 4 * brief["metric"]["batch"] * (cfg.layers * cfg.d_model + cfg.d_model + cfg.classes)

# %% [markdown]
# ## Exercise 5 — Decide, and the solution card (22 points, ~20 min)
#
# A decision is a choice among candidates whose costs you can now compute. `decide(candidates, ...)` receives
# a DataFrame with one row per candidate configuration — columns `strategy` ("none", "dp", "zero", "tp",
# "pp"), degrees `dp`, `zero`, `tp`, `pp`, `ranks` (= dp·tp·pp), `mem_bytes` (per rank) and `step_s` (seconds
# per global batch) — and returns the chosen row as a dict (`row.to_dict()`). The rules:
# 1. **feasible**: `mem_bytes <= mem_budget`; `tp <= gpus_per_node` (tensor parallelism only inside a node);
#    `dp * micro_batch <= global_batch` (data parallelism is exhausted at global batch ÷ micro-batch);
#    `ranks <= max_ranks` (the cost budget); a row on a limit is feasible;
# 2. nothing feasible → `ValueError` naming the budget and the smallest `mem_bytes` on offer (the test uses
#    small numbers: any plain format of them will do);
# 3. **stop when splitting stops paying**: among feasible rows with `step_s <= (1 + tolerance) * fastest`
#    (relative, inclusive), take the one with the fewest `ranks`; ties → the smaller `step_s`, then the
#    earlier row.
#
# Stuck? `hint("lab01.decide")`

# %% nbgrader={"grade": false, "grade_id": "decide_solution", "locked": false, "schema_version": 3, "solution": true}
def decide(candidates: pd.DataFrame, *, mem_budget: float, global_batch: int, micro_batch: int,
           gpus_per_node: int, max_ranks: int, tolerance: float = 0.05) -> dict:
    """The chosen candidate (a row of ``candidates`` as a dict), by the three rules above."""
    ### BEGIN SOLUTION
    c = candidates
    ok = c[(c["mem_bytes"] <= mem_budget) & (c["tp"] <= gpus_per_node)
           & (c["dp"] * micro_batch <= global_batch) & (c["ranks"] <= max_ranks)]
    if ok.empty:
        raise ValueError(f"no candidate fits: mem_budget {mem_budget:.4g} B per rank, smallest on offer "
                         f"{c['mem_bytes'].min():.4g} B (or every one breaks the node, batch or rank limits)")
    near = ok[ok["step_s"] <= ok["step_s"].min() * (1 + tolerance)]  # splitting further buys < tolerance
    return near.sort_values(["ranks", "step_s"], kind="stable").iloc[0].to_dict()
    ### END SOLUTION


# %% [markdown]
# **The lab model's decision.** Candidates for 1–8 ranks built from *your* cost models (`memory_per_rank`,
# `ddp_step_time`) and *your* measurements (the baseline's compute, the all-reduce fit): every `step_s` but
# the one-rank row is *simulated*, calibrated on this machine's CPU with gloo over loopback at world 2. TP
# candidates keep the replicated activations whole on every rank. A budget of
# 8 GiB per rank, 8 devices per node and at most 8 ranks. Then the fallback drill: stage 1 of a two-stage
# pipeline is SIGKILLed mid-run; how long until `launch` names it?

# %%
decision_kw = {"mem_budget": 8 * 2**30, "global_batch": global_batch, "micro_batch": 8, "gpus_per_node": 8,
               "max_ranks": 8}
cands = lab01.lab_candidates(memory_per_rank, ddp_step_time, n_params=n_lab, act_bytes=float(act_lab),
                             act_replicated_bytes=float(act_replicated), act_boundary_bytes=float(act_boundary),
                             compute_s=baseline["step_s"], alpha=a_ar, beta=b_ar, layers=cfg.layers,
                             worlds=[2, 4, 8], micro_batches=4)
chosen = decide(cands, **decision_kw)
display(cands.sort_values("step_s").head(8).rename(columns={"step_s": f"step_s ({SIM}; measured at 1 rank)"}))
print("chosen:", chosen)
drill = lab01.kill_drill()
display(pd.DataFrame([drill]))

# %% [markdown]
# **The solution card.** Fill it from the numbers above, for the configuration you chose: latency (its
# `step_s`, seconds per step of the brief's global batch), cost (dollars per million samples at the brief's
# price per device-hour, over its `ranks` devices, from `baseline_metrics`), capacity (the largest parameter
# count whose memory under the chosen strategy fits the 8 GiB budget: `lab01.max_params(memory_per_rank,
# budget, **strategy)` searches it for you; the test recomputes it for your chosen strategy) and fallback
# (seconds until a dead pipeline peer is named, from the drill; say what happens to the job).

# %% nbgrader={"grade": false, "grade_id": "card_solution", "locked": false, "schema_version": 3, "solution": true}
from course_dist.card import Limit, SolutionCard

### BEGIN SOLUTION
strategy = {k: int(chosen[k]) for k in ("zero", "tp", "pp")} | {"world": int(chosen["ranks"]), "micro_batches": 4}
chosen_cost = baseline_metrics(chosen["step_s"], global_batch / int(chosen["ranks"]), None,
                               brief["metric"]["price_per_device_hour"], devices=int(chosen["ranks"]))
capacity = lab01.max_params(memory_per_rank, 8 * 2**30, act_bytes=float(act_lab), param_bytes=4, grad_bytes=4,
                            optim_bytes=8, **strategy)
card = SolutionCard(
    lab="lab01",
    latency=Limit(float(chosen["step_s"]), "s/step", f"{chosen['strategy']} on {int(chosen['ranks'])} rank(s), "
                  f"global batch {global_batch}; {'measured' if chosen['ranks'] == 1 else SIM}"),
    cost=Limit(chosen_cost["cost_per_million_samples"], "$ per 1M samples",
               f"{int(chosen['ranks'])} device(s) at ${brief['metric']['price_per_device_hour']}/h"),
    capacity=Limit(float(capacity), "parameters", "fp32 AdamW + one batch of activations in 8 GiB per rank"),
    fallback=Limit(float(drill["detect_s"]), "s until a dead peer is named",
                   f"RankError names rank {drill['reported rank']}; the job stops, progress since the last "
                   "checkpoint is lost (lab 04 adds checkpoints and restart)"),
    justification=(
        f"Measured (CPU, gloo): {brief_tp[2]:.0f} samples/s at world 2 vs {brief_tp[1]:.0f} at 1. The decision "
        f"({SIM}) picked {chosen['strategy']} on {int(chosen['ranks'])} rank(s): the {n_lab:,}-parameter model "
        "fits one rank, so time, not memory, is the binding resource and each split pays an all-reduce "
        f"against the compute it saves. Beyond {capacity:.3g} parameters shard the states (ZeRO) first."),
)
### END SOLUTION
card

# %% nbgrader={"grade": true, "grade_id": "decide_tests", "locked": true, "points": 12, "schema_version": 3, "solution": false}
# the decision rules on scenarios with a known answer
def choice(table, kw):
    try:
        row = decide(table, **kw)
    except ValueError as exc:
        return f"ValueError: {exc}"
    return (row["strategy"], int(row["dp"]), int(row["zero"]), int(row["tp"]), int(row["pp"]))


expected = {"do not split": ("none", 1, 0, 1, 1), "split pays": ("dp", 8, 0, 1, 1),
            "dp at global batch / micro-batch": ("dp", 4, 0, 1, 1), "tp only inside a node": ("tp", 1, 0, 4, 1),
            "memory forces zero": ("zero", 8, 3, 1, 1), "over the rank budget": ("dp", 8, 0, 1, 1),
            "on every limit": ("zero", 8, 3, 4, 1), "tolerance is inclusive": ("none", 1, 0, 1, 1),
            "tolerance is relative": ("none", 1, 0, 1, 1), "ties": ("tp", 1, 0, 4, 1), "nothing fits": "ValueError"}
for name in lab01.SCENARIOS:
    got = choice(*lab01.scenario(name))
    want = expected[name]
    if want == "ValueError":
        assert isinstance(got, str) and got.startswith("ValueError"), \
            f"scenario {name!r}: nothing fits, want a ValueError, got {got}"
    else:
        assert got == want, f"scenario {name!r}: chose {got}, want {want}\n{lab01.scenario(name)[0]}"
# nothing fits: the ValueError names the budget and the smallest mem_bytes on offer (small numbers, any format)
none_fit, none_kw = lab01.scenario("nothing fits")
refusal = choice(none_fit.assign(mem_bytes=[1e7, 150.0]), {**none_kw, "mem_budget": 100.0})
assert isinstance(refusal, str) and refusal.startswith("ValueError") and "100" in refusal and "150" in refusal, \
    f"nothing fits (mem_budget 100 B, mem_bytes 1e7 and 150 B): want a ValueError naming 100 and 150, got {refusal}"
# the card against this lab's own measurements
measured = {"latency": float(chosen["step_s"]),
            "cost": baseline_metrics(chosen["step_s"], global_batch / int(chosen["ranks"]), None,
                                     brief["metric"]["price_per_device_hour"],
                                     int(chosen["ranks"]))["cost_per_million_samples"],
            "fallback": float(drill["detect_s"]),
            "capacity": float(lab01.max_params(memory_per_rank, 8 * 2**30, act_bytes=float(act_lab), param_bytes=4,
                                               grad_bytes=4, optim_bytes=8, world=int(chosen["ranks"]),
                                               micro_batches=4, **{k: int(chosen[k]) for k in ("zero", "tp", "pp")}))}
course_dist.check_card(card, measured=measured)
assert drill["reported rank"] == 1, f"the drill killed rank 1, launch named {drill['reported rank']}"
### BEGIN HIDDEN TESTS
from course_dist.evidence import Evidence, grading_seed

ev = Evidence("decide_tests")
for name in lab01.SCENARIOS:
    got = choice(*lab01.scenario(name))
    ev.equal(f"scenario {name}", got.split(":")[0] if isinstance(got, str) else list(got))
rng = random.Random(grading_seed() + 5)
for i in range(40):
    table, kw = lab01.random_scenario(rng)
    kw["tolerance"] = rng.choice([0.0, 0.05, 0.2])
    got = choice(table, kw)
    ev.equal(f"random scenario {i}", got.split(":")[0] if isinstance(got, str) else list(got))
ev.rule("card", {"card": asdict(card), "measured": measured}, rule="common.card", rtol=0.25)
ev.equal("drill names the dead stage", drill["reported rank"])
ev.rule("nothing fits names the numbers", refusal, rule="common.contains", needles=["100", "150"])
budget_h = rng.randint(201, 899)  # drawn: a budget and a smallest row that no other number contains
smallest_h = budget_h + rng.randint(1, 99)
refusal_h = choice(none_fit.assign(mem_bytes=[1e7, float(smallest_h)]), {**none_kw, "mem_budget": float(budget_h)})
ev.rule("nothing fits names drawn numbers", refusal_h, rule="common.contains", needles=[str(budget_h),
                                                                                       str(smallest_h)])
ev.rule("decision is decide() of the candidates", {"candidates": cands.to_dict("list"), "kw": decision_kw,
                                                   "chosen": [chosen["strategy"], int(chosen["ranks"])]},
        rule="lab01.decision_consistent")
del ev  # the judge reads the evidence files; nothing here may print a number (partial credit)
### END HIDDEN TESTS

# %% [markdown]
# **Written (10 points).** Justify the card. Which resource, if any, exceeds its budget for the lab model, and
# which strategy did the numbers choose (quote step times of at least three candidates, saying which are
# simulated and what they are calibrated on)? Quote the brief's measured numbers from exercise 1 (samples/s at
# world 1 and 2, steps lost). At what model size (from the capacity number and the memory table) or per-rank
# batch (from the break-even) would the choice change, and to what? What happens to this job when one rank
# dies (the drill), and what does the brief's "loses progress" need beyond this lab?

# %% [markdown] nbgrader={"grade": true, "grade_id": "card_justification", "locked": false, "points": 10, "schema_version": 3, "solution": true}
# === BEGIN MARK SCHEME ===
# Full marks: quotes exercise 1's measured brief (world-2 samples/s below world 1's, steps lost = all steps
# done without a checkpoint); memory is not binding for the lab model (MBs vs 8 GiB); time is dominated by
# communication on this box: quotes step times of "none" (measured) vs DP/TP/PP candidates, labelled as
# simulated (cost models calibrated by the world-2 gloo fit on this CPU machine); the decision is "none"/one rank (or the
# measured winner) with the reason (all-reduce > compute saved); names when it changes: a model beyond the
# capacity (-> ZeRO-1/2/3 before TP/PP; ZeRO-3 costs 1.5x comm), a per-rank batch above break-even (-> DP);
# a dead rank stops the whole synchronous job within ~the drill's seconds (RankError); "loses progress" needs
# checkpoints + elastic restart (lab 04/homework).
# === END MARK SCHEME ===

# %% [markdown]
# ## Stretch A — Pipeline schedules (10 points, ~20 min, optional)
#
# Cut the lab model's blocks into `p` stages, one per rank, and the batch into `m` micro-batches. A schedule
# is, per stage, the order of its actions: `("F", i)` runs micro-batch `i` forward (receiving its activation
# from the previous stage, sending its output on), `("B", i)` runs it backward (receiving the output gradient
# from the next stage, sending the input gradient back). `lab01.run_schedule` executes your lists over real
# send/recv.
# - **GPipe**: all `m` forwards, then all `m` backwards in the same order.
# - **1F1B**: stage `s` first runs `min(p - s - 1, m)` warm-up forwards; then alternates one forward (while
#   any is left) and one backward, in micro-batch order, until all `m` backwards are done.
#
# Both give exactly the single-process gradients (micro-batches of equal size: `m` divides the batch);
# they differ in how many micro-batches' activations a stage holds at once (GPipe `m`, 1F1B `p - s` on stage `s`) — the memory of exercise 2. Unknown `kind` →
# `ValueError` naming it. The test checks gradients and loss against one process and against torch's
# `ScheduleGPipe` / `Schedule1F1B` (within 1e-6), and the peak activations held per stage, at p = 2, m = 4, and
# the exact orders at p = 3: GPipe's, and 1F1B's (warm-up, steady state, cool-down), including fewer
# micro-batches than stages.
#
# Stuck? `hint("lab01.pipeline")`

# %% nbgrader={"grade": false, "grade_id": "pipeline_solution", "locked": false, "schema_version": 3, "solution": true}
def schedule(kind: str, stage: int, p: int, m: int) -> list[tuple[str, int]]:
    """Ordered actions of ``stage`` (of ``p``) for ``m`` micro-batches under ``kind`` ("gpipe" or "1f1b")."""
    ### BEGIN SOLUTION
    if kind == "gpipe":
        return [("F", i) for i in range(m)] + [("B", i) for i in range(m)]
    if kind != "1f1b":
        raise ValueError(f"kind must be 'gpipe' or '1f1b', got {kind!r}")
    warmup = min(p - stage - 1, m)  # later stages start their backwards sooner
    actions = [("F", i) for i in range(warmup)]
    f, b = warmup, 0
    while b < m:
        if f < m:
            actions.append(("F", f))
            f += 1
        actions.append(("B", b))
        b += 1
    return actions
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "pipeline_tests", "locked": true, "points": 10, "schema_version": 3, "solution": false}
def check_pipeline(p, m, tol=1e-6):
    single = lab01.single_process()
    out = {}
    both = launch(lab01.compare_schedules, world_size=p, args=(schedule, ("gpipe", "1f1b"), m), timeout=60)
    for kind, want_peak in (("gpipe", [m] * p), ("1f1b", [min(m, p - s) for s in range(p)])):
        res, ref = [r[kind]["mine"] for r in both], [r[kind]["torch"] for r in both]
        loss = res[p - 1]["loss"]
        assert abs(loss - single["loss"]) < tol, f"{kind}, p={p}, m={m}: loss {loss} != single process " \
            f"{single['loss']}"
        for s in range(p):
            for name, g in res[s]["grads"].items():
                err = float((g - single["grads"][name]).abs().max())
                assert err < tol, \
                    f"{kind}, p={p}, m={m}, stage {s}: {name} gradient off by {err:.3g} vs one process (want < {tol:g})"
                err = float((g - ref[s]["grads"][name]).abs().max())
                assert err < tol, \
                    f"{kind}, p={p}, m={m}, stage {s}: {name} off by {err:.3g} vs torch's schedule (want < {tol:g})"
        peaks = [r["peak_held"] for r in res]
        assert peaks == want_peak, f"{kind}, p={p}, m={m}: micro-batches held per stage {peaks}, want {want_peak}"
        out[kind] = res
    return out


pipe = check_pipeline(2, 4)
try:
    schedule("zero-bubble", 0, 2, 4)
    raise AssertionError("an unknown kind must raise ValueError")
except ValueError as exc:
    assert "zero-bubble" in str(exc), f"the message must name the kind 'zero-bubble', got: {exc}"
F_, B_ = "F", "B"
want_order = {(0, 4): [(F_, 0), (F_, 1), (F_, 2), (B_, 0), (F_, 3), (B_, 1), (B_, 2), (B_, 3)],
              (1, 4): [(F_, 0), (F_, 1), (B_, 0), (F_, 2), (B_, 1), (F_, 3), (B_, 2), (B_, 3)],
              (2, 4): [(F_, 0), (B_, 0), (F_, 1), (B_, 1), (F_, 2), (B_, 2), (F_, 3), (B_, 3)],
              (0, 1): [(F_, 0), (B_, 0)]}
for (s, m), want in want_order.items():
    got = [tuple(a) for a in schedule("1f1b", s, 3, m)]
    assert got == want, f"1F1B order, p=3, m={m}, stage {s}: {got}, want {want}"
want_gpipe = [(F_, i) for i in range(4)] + [(B_, i) for i in range(4)]  # backwards in the forwards' order
for s in range(3):
    got = [tuple(a) for a in schedule("gpipe", s, 3, 4)]
    assert got == want_gpipe, f"GPipe order, p=3, m=4, stage {s}: {got}, want {want_gpipe}"
### BEGIN HIDDEN TESTS
from course_dist.evidence import Evidence

ev = Evidence("pipeline_tests")
for p, m in ((2, 4), (3, 6), (3, 2), (3, 1)):
    for kind in ("gpipe", "1f1b"):
        ev.equal(f"schedule {kind} p={p} m={m}", [[list(a) for a in schedule(kind, s, p, m)] for s in range(p)])
ev.equal("p=2 m=4 peaks", {k: [r["peak_held"] for r in v] for k, v in pipe.items()})
ev.close("p=2 m=4 loss", {k: v[1]["loss"] for k, v in pipe.items()}, atol=1e-6)
if not course_dist.fast_mode():  # three real stages (the schedules above are checked at p = 3 either way)
    ev.equal("p=3 m=4 peaks", {k: [r["peak_held"] for r in v] for k, v in check_pipeline(3, 4).items()})
del ev  # the judge reads the evidence files; nothing here may print a number (partial credit)
### END HIDDEN TESTS

# %% [markdown]
# **The bubble.** One stage's timeline of a 1F1B step at p = 2 (compute spans; the gaps are the bubble), and
# the measured idle fraction against (p − 1)/(m + p − 1). A 2-core machine shared by both ranks blurs it.

# %%
spans = pd.DataFrame([s for r in pipe["1f1b"] for s in r["spans"]], columns=["rank", "step", "kind", "start", "end"])
_ax = course_dist.plot_timeline(spans, title="1F1B, p=2, m=4 (compute spans per stage)")
busy = spans.assign(d=spans["end"] - spans["start"]).groupby("rank")["d"].sum()
makespan = spans["end"].max() - spans["start"].min()
display(pd.DataFrame({"measured idle fraction": 1 - busy / makespan, "(p-1)/(m+p-1)": 1 / 5}))


# %% [markdown]
# ## Stretch B — Activations decide the budget (5 points, ~15 min, optional)
#
# Exercise 2 took activations as given. For a transformer they grow with the sequence length `s`, and at long
# `s` they, not the model states, exceed the budget. The Ultra-Scale Playbook (after Korthikanti et al., 2022)
# counts what one layer (attention + MLP) saves for backward, for micro-batch `b`, hidden size `h`, `a` heads:
# `s·b·h·(34 + 5·a·s/h)` bytes, **assuming 16-bit activations and 1-byte dropout masks**. Per layer, the `sbh`
# term is 16 tensors' worth of values of size s·b·h (LayerNorm inputs 2, QKV input 1, Q and K 2, V 1,
# attention-projection input 1, MLP input 1, GELU input 4, fc2 input 4) plus two dropout masks of that size;
# the `as²b` term is the softmax output, its dropout mask and the dropout output (a·s·s·b values each).
#
# Write `block_activation_bytes(s, b, h, a, *, value_bytes=2, mask_bytes=1, dropout=True)` that generalizes
# it to other precisions: `s·b·h·(16·value_bytes + 2·mask_bytes) + a·s²·b·(2·value_bytes + mask_bytes)` with
# dropout; without dropout there are no masks and no dropout output: `s·b·h·16·value_bytes +
# a·s²·b·value_bytes`. Return an `int`. The test checks the Playbook's formula exactly (16-bit) and your
# formula against a saved-tensor ledger of a real fp32 block on this CPU, within 1 % (the ledger also holds two
# per-token LayerNorm statistics the formula leaves out). Note what the CPU measures: torch's CPU dropout
# multiplies by a float32 mask, so here `mask_bytes = 4`.
#
# Stuck? `hint("lab01.activations")`

# %% nbgrader={"grade": false, "grade_id": "activations_solution", "locked": false, "schema_version": 3, "solution": true}
def block_activation_bytes(s: int, b: int, h: int, a: int, *, value_bytes: int = 2, mask_bytes: int = 1,
                           dropout: bool = True) -> int:
    """Bytes one transformer layer saves for backward (the activation model above, any precision)."""
    ### BEGIN SOLUTION
    if not dropout:  # no masks, no dropout output
        return s * b * h * 16 * value_bytes + a * s * s * b * value_bytes
    return s * b * h * (16 * value_bytes + 2 * mask_bytes) + a * s * s * b * (2 * value_bytes + mask_bytes)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "activations_tests", "locked": true, "points": 5, "schema_version": 3, "solution": false}
for s, b, h, a in ((4096, 1, 4096, 32), (2048, 4, 1024, 16), (512, 2, 768, 12)):
    got = block_activation_bytes(s, b, h, a)
    want = s * b * h * 34 + 5 * a * s * s * b  # the Playbook's s*b*h*(34 + 5*a*s/h), in integers
    assert isinstance(got, int) and got == want, \
        f"16-bit with dropout, s={s} b={b} h={h} a={a}: {got!r} ({type(got).__name__}), want the int {want}"
ledgers = [lab01.block_ledger(s, b, h, a, dropout=p) for s, b, h, a, p in ((64, 2, 64, 4, 0.1), (96, 1, 48, 3, 0.0))]
for led, with_dropout in zip(ledgers, (True, False), strict=True):
    mine = block_activation_bytes(led["s"], led["b"], led["h"], led["a"], value_bytes=4, mask_bytes=4,
                                  dropout=with_dropout)
    assert abs(mine - led["saved_bytes"]) <= 0.01 * led["saved_bytes"], \
        f"fp32 CPU block s={led['s']} b={led['b']} h={led['h']} a={led['a']} dropout {led['dropout']}: " \
        f"your formula {mine} B, the ledger measured {led['saved_bytes']} B (want within 1 %)"
### BEGIN HIDDEN TESTS
from course_dist.evidence import Evidence, grading_seed

ev = Evidence("activations_tests")
rng = random.Random(grading_seed() + 7)
ev.equal("visible 16-bit", [block_activation_bytes(s, b, h, a) for s, b, h, a in
                            ((4096, 1, 4096, 32), (2048, 4, 1024, 16), (512, 2, 768, 12))])
for i in range(6):  # every class at every seed: 16-bit, fp32 CPU masks, bf16 without dropout
    s, b, a = rng.choice([128, 1024, 8192]), rng.randint(1, 8), rng.choice([8, 16, 32])
    h = a * rng.choice([64, 128])
    ev.equal(f"drawn shape {i}", [block_activation_bytes(s, b, h, a),
                                  block_activation_bytes(s, b, h, a, value_bytes=4, mask_bytes=4),
                                  block_activation_bytes(s, b, h, a, dropout=False)])
ev.close("fp32 ledgers", [float(block_activation_bytes(x["s"], x["b"], x["h"], x["a"], value_bytes=4, mask_bytes=4,
                                                       dropout=d)) for x, d in zip(ledgers, (True, False), strict=True)],
         rtol=0.0)
del ev  # the judge reads the evidence files; nothing here may print a number (partial credit)
### END HIDDEN TESTS

# %% [markdown]
# **Recomputation, measured, and a budget that activations break.** First, four fp32 blocks on this CPU with
# and without `torch.utils.checkpoint` per block: the ledger's bytes held between forward and backward, and
# the step time (forward + backward), alternated over rounds. Then a 7 B-class model at s = 4096 on 8 ranks
# with an 80 GB budget, *derived* from your formula (16-bit, dropout) and your `memory_per_rank`, not
# measured: which remedy fits?

# %%
trade = lab01.recompute_trade(pick(full=256, fast=128), 2, 64, 4, layers=4, rounds=pick(full=7, fast=3))
display(pd.DataFrame([{"held (MB), plain": trade["held_bytes"] / 1e6,
                       "held (MB), recompute": trade["held_bytes_recompute"] / 1e6,
                       "memory ratio": trade["memory_ratio"],
                       "step ms plain (min/median/max)": [round(1e3 * f(trade["step_s"]), 2) for f in (min, statistics.median, max)],
                       "step ms recompute (min/median/max)": [round(1e3 * f(trade["step_s_recompute"]), 2)
                                                              for f in (min, statistics.median, max)],
                       "time ratio (median)": trade["time_ratio_median"]}]))
display(pd.DataFrame(lab01.decision_case(block_activation_bytes, memory_per_rank)))

