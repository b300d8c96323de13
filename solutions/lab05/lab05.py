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
# # Lab 05 — Hangs, stragglers and scaling efficiency
#
# **The brief.** *An eight-GPU job is slower than one GPU and loses progress on failure.* Lab 01 reproduced it on
# real process groups; labs 02–04 built the pieces that make more ranks pay (overlapped, bucketed all-reduce;
# sharded state; the parallelism that fits). This lab is about the ranks that still hold the job back once those
# pieces are in: a rank that takes a different path hangs every rank, a slow rank sets everyone's pace, and more
# ranks stop paying beyond the critical batch. It ends with the two numbers the homework's fault-tolerant trainer
# needs — how many ranks to run, and when to declare a hang — and the homework then resolves the brief.
#
# **Thesis.** *Distributed speed is synchronized speed.* A synchronous job moves at the pace of its slowest
# rank, and stops dead when one rank takes a different path. So: **diagnose the first divergence**, **measure
# the slowest rank**, and **scale against quality and cost** — not against worker count.
#
# Four core exercises (~90 min, 85 points): name the culprit of eight planted hangs from what the hung job leaves
# behind; find a straggler and rebalance around it without changing the gradient; measure scaling efficiency and
# the gradient noise scale; choose a worker count, a global batch, a collective timeout and a hang-detection
# deadline, and write them on the solution card. Two optional stretches (15 points): **Stretch A** (10 points,
# ~15 min) ends an epoch with uneven inputs three ways without a hang; **Stretch B** (5 points, ~10 min) reads
# torch's flight-recorder dumps of the same planted hangs. 100 needs both; the core alone earns 85.
#
# **Measured or simulated.** Everything at world 1–3 is measured here (gloo on loopback, 2 shared CPU cores).
# Figures at 8–64 ranks are *simulated*: an α–β model calibrated by this machine's gloo all-reduce at world 2,
# with a fixed 4 ms per sample standing in for compute. Every simulated number is labelled so, with that calibration; none is a
# GPU or NCCL fact.
#
# Every hang here is real (gloo process groups, `course_dist.launch`) and ends as a `LaunchTimeout` within a few
# seconds. Stuck? `hint("lab05.<exercise>")` shows a nudge, `hint(id, 2)` an approach, `hint(id, 3)` a
# near-solution. Grading runs this notebook with `COURSE_FAST=1`; `pick(full=..., fast=...)` chooses sizes.

# %%
import dataclasses
import math

import pandas as pd
import torch
import torch.distributed as dist
from IPython.display import display
from torch.distributed.algorithms import Join

import course_dist
from course_dist import LaunchTimeout, first_divergence, hint, pick  # noqa: F401 - hint: see the markdown
from course_dist.card import Limit, SolutionCard
from course_dist.labkit import lab05

pd.set_option("display.precision", 4)
print("fast mode:", course_dist.fast_mode())

# %% [markdown]
# ## Exercise 1 — Diagnose planted hangs (25 points, ~25 min)
#
# `lab05.plant(cases)` runs eight planted hangs at world 3 (all at once, so they cost about one 3-second
# timeout). Six classics: an **extra collective** on one rank, an **op mismatch**, a **shape mismatch**, a
# **rank-conditional barrier**, **uneven inputs** at epoch end, an **unused parameter under DDP**. And two
# where the culprit's stack is *not* at its divergent call: **`async_extra`** (its extra all_reduce, in a
# logging helper, is started with `async_op=True` and never waited for, so the culprit has moved on to the
# barrier; with CUDA tensors torch's docs say even a synchronous collective returns once it is enqueued, so
# on GPUs this is the usual picture, not measured here) and **`ddp_uneven`** (uneven inputs under DDP: the
# culprit's extra step waits in DDP's all-reduce inside a train-step helper). Each ends as a `LaunchTimeout`
# carrying `.trace` (every collective each rank issued, `trace=True`), `.stacks` (each rank's Python stack at
# the timeout) and `.last_collective` (each rank's latest collective).
#
# Write `diagnose(err)` returning a dict with four keys, from these rules:
# - `course_dist.first_divergence(err.trace)` gives the first collective number where the ranks disagree; its
#   `.ranks` holds the odd one out — the **culprit** (`"rank"`), and `.seq` the number (`"seq"`). The healthy
#   majority are *not* the culprit, even though they are the ones stuck waiting.
# - `"op"`: what the culprit called at that number (`div.calls[rank]["op"]`), or `None` when it never called it.
# - `"line"`: the culprit's source line (an `int`, not a string) of its **divergent** call: its call site
#   (`div.calls[rank]["site"]` is `"file:line"`) when it made the call, even if it has moved past it since
#   (its stack and `.last_collective` then show where it is *now*, not what diverged); else where its stack
#   shows it stuck: the **innermost** of `lab05.user_frames(err.stacks[rank])` (frames outside torch and the
#   launcher, innermost first: a helper's line, not the line that called the helper).
#
# Why world 3: at world 2 there is no majority. One rank skipping a collective and the other making an extra one
# leave the same trace, so `first_divergence` marks the divergence `ambiguous`, lists **both** ranks in `.ranks`
# and says which one is `.behind` in the program (its call sits earlier, or it never made it); each rank's
# stack then decides. An extra all-reduce on rank 0 and one on rank 1 at world 2 give mirror-image traces.
#
# Two other classics have no single odd one out in the trace, so they are not in the graded set: a send/recv
# cycle (every rank waits in `recv`: read the stacks, find the cycle) and process groups created in different
# orders (ranks stuck inside `new_group`, which the trace does not record).
#
# Stuck? `hint("lab05.diagnose")`

# %%
visible_cases = [("extra_collective", 1), ("op_mismatch", 2), ("shape_mismatch", 0),
                 ("conditional_barrier", 1), ("uneven_epoch", 2), ("ddp_unused", 0), ("async_extra", 2),
                 ("ddp_uneven", 1)]
errs = lab05.plant(visible_cases, timeout=3.0)
print([type(e).__name__ for e in errs])
print(str(errs[5])[:1200])  # the DDP case: what the launcher itself reports


# %% nbgrader={"grade": false, "grade_id": "diagnose_solution", "locked": false, "schema_version": 3, "solution": true}
def diagnose(err: LaunchTimeout) -> dict:
    """``{"rank": culprit, "seq": collective number, "op": culprit's op there or None, "line": int}`` for a
    ``LaunchTimeout`` of a ``trace=True`` launch (rules above)."""
    ### BEGIN SOLUTION
    div = first_divergence(err.trace)
    if div is None:
        raise ValueError("the ranks' collective sequences agree: no divergence to diagnose")
    rank = div.ranks[0]  # the odd one out; the majority are waiting for it
    call = div.calls.get(rank)
    if call is not None:
        return {"rank": rank, "seq": div.seq, "op": call["op"], "line": int(call["site"].rsplit(":", 1)[1])}
    # it never made that call: it is stuck somewhere else (DDP's C++ collectives are not traced)
    frame = lab05.user_frames(err.stacks[rank])[0]
    return {"rank": rank, "seq": div.seq, "op": None, "line": frame.line}
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "diagnose_tests", "locked": true, "points": 21, "schema_version": 3, "solution": false}
for (case, culprit), err in zip(visible_cases, errs, strict=True):
    assert isinstance(err, LaunchTimeout), f"{case}: the planted hang should end as a LaunchTimeout, got {err!r}"
    got, want = diagnose(err), lab05.truth(case, culprit)
    assert type(got.get("line")) is int, \
        f"{case}: 'line' must be an int, expected {want['line']!r}, got {got.get('line')!r}"
    assert got.get("line") == want["line"], f"{case} (culprit rank {culprit}): the line of the culprit's " \
        f"divergent call (innermost frame) is {want['line']}, diagnose gave {got.get('line')!r}"
    assert got == want, f"{case} (culprit rank {culprit}): diagnose gave {got}, expected {want}"
### BEGIN HIDDEN TESTS
from course_dist.evidence import Evidence, grading_seed

ev = Evidence("diagnose_tests")
for (case, culprit), err in zip(visible_cases, errs, strict=True):
    ev.equal(f"visible {case} culprit {culprit}", diagnose(err))
# every case on another culprit than the visible one, and ranks 0, 1 and 2 all culprits, at every seed
shift = 1 + grading_seed() % (lab05.WORLD - 1)
hidden_cases = [(case, (culprit + shift) % lab05.WORLD) for case, culprit in visible_cases]
for (case, culprit), err in zip(hidden_cases, lab05.plant(hidden_cases, timeout=3.0), strict=True):
    got = diagnose(err) if isinstance(err, LaunchTimeout) else f"not a LaunchTimeout: {type(err).__name__}"
    ev.equal(f"hidden {case}", {"culprit": culprit, "diagnosis": got})
### END HIDDEN TESTS

# %% [markdown]
# **torch's own tools on the six classic hangs** — measured by `bench/bench_hang_tools.py` (page
# `bench/results/hang_tools.md`: world 3, gloo on this 2-core machine, 3 rounds, torch 2.13; a CPU/gloo
# measurement, not an NCCL/GPU one; load average 0.8–2.6). Seconds from the hang's start to the answer (min /
# median / max over 18 runs):
#
# | tool | culprit rank right | planted line right | seconds |
# |---|---|---|---|
# | this lab: trace + stacks after a 3 s launcher timeout | 18/18 runs | 18/18 runs | 3.14 / 3.19 / 3.20 |
# | `TORCH_DISTRIBUTED_DEBUG=DETAIL` | 15/18 runs | 15/18 runs | 0.00 / 0.02 / 0.08 (3 runs > 30 s) |
# | flight recorder (`TORCH_FR_BUFFER_SIZE`), read by (group, seq) | 18/18 runs | 18/18 runs | 1.61 / 3.35 / 3.42 |
# | torch's analyzer `fr_trace` on the same dumps | 9/18 runs | 0/18 runs | 2.63 / 4.40 / 4.50 |
# | `monitored_barrier` on its own group after the hang | 0/18 runs | 0/18 runs | 2.02 / 2.03 / 5.37 |
#
# What the table says. **DETAIL** checks every collective's fingerprint (op, shapes) across ranks before running
# it, so it is by far the fastest on the five mismatches; but it never names the DDP unused-parameter hang (in
# every run the ranks were still waiting inside DDP's reducer at the bench's 30 s limit), the op it reports is
# sometimes its own check's (`gather`, `reduce`), and the line comes only from the culprit's own traceback.
# The **flight recorder** records DDP's C++ all-reduce, which this lab's Python trace cannot see, so it names
# `ddp_unused`'s culprit *and* its op; on gloo it can be dumped only once the stuck collective has timed out (a
# dump from a watchdog thread waits for it), and the dumps were ready 1.6–3.4 s after the hang began (gloo's
# timeout: 2 s; gloo fails a shape mismatch before it; 2.7–13 s in an earlier run at load average 3–7).
# torch's analyzer needed the dumps' `pg_config` rewritten to run on gloo, then named
# the culprit of three hangs and the wrong rank or none on `op_mismatch`, `uneven_epoch` and `ddp_unused`.
# **`monitored_barrier`** names ranks that do not arrive: every rank here is alive and times out together, so
# it named nobody (on the DDP hang, nobody or the wrong ranks). On NCCL, torch's docs describe a watchdog that
# dumps the flight recorder on a timeout by itself (`TORCH_NCCL_DUMP_ON_TIMEOUT`; not measured here).
# **Stretch B** (optional, at the end) has you read the flight recorder's dumps of these hangs yourself.

# %% [markdown]
# **Written (4 points).** Which of the planted hangs did the trace *not* show at the culprit's own call, and why?
# For a production job that hangs once a week on 512 GPUs, name two things you would turn on beforehand (from
# this lab, or torch's flight recorder / `monitored_barrier` / `TORCH_DISTRIBUTED_DEBUG`) and what each would
# have told you.

# %% [markdown] nbgrader={"grade": true, "grade_id": "hangs_written", "locked": false, "points": 4, "schema_version": 3, "solution": true}
# The two DDP hangs (unused parameter, uneven inputs): DDP's bucket all-reduces run inside its C++ reducer,
# which the Python-level trace does not see, so the culprit appears as "never called" the next collective and
# only its stack shows it stuck in `backward` (in `ddp_uneven`, inside the train-step helper). Beforehand: a short collective timeout with stack dumps on every rank (this lab's
# launcher; in torch the NCCL watchdog with `TORCH_NCCL_DUMP_ON_TIMEOUT`) and the flight recorder
# (`TORCH_FR_BUFFER_SIZE`), whose per-rank sequence numbers name the missing rank at collective N without a
# Python-level trace; `TORCH_DISTRIBUTED_DEBUG=DETAIL` would have reported the shape/op mismatches at once.
#
# === BEGIN MARK SCHEME ===
# 2 points: names ddp_unused (and ddp_uneven) and why (C++ reducer collectives are not traced; the culprit is found from its
# stack). 2 points: two concrete tools with what each reports (flight recorder: seq numbers/missing ranks;
# monitored_barrier: the ranks that did not arrive; DETAIL: mismatched fingerprints; timeout + stack dumps).
# === END MARK SCHEME ===

# %% [markdown]
# ## Exercise 2 — Stragglers (22 points, ~25 min)
#
# `lab05.run_straggler(sizes, slow_rank, factor)` trains one global batch split as `sizes` (samples per rank);
# the slow rank costs `factor` × more per sample **inside its forward pass**. Each rank's `StepTimer` spans come
# back as one frame (`rank, step, kind, seconds`; kind `"compute"` = forward + backward, `"comm"` = the
# gradient all-reduce). Because a blocking collective returns when the last rank arrives, every rank's *total*
# step time is the same: the straggler shows up as the **others' comm time**, and only per-rank **compute
# before the first collective** names it. Write:
# - `slowest_rank(spans)`: the rank with the largest **median** compute seconds per step (one GC pause or a
#   warm-up step on a fast rank must not name it);
# - `rebalance(sec_per_sample, global_batch)`: integer sizes proportional to each rank's speed
#   (`1 / sec_per_sample`), each ≥ 1, summing to `global_batch` (≥ the number of ranks): floor the ideal
#   shares, then give the missing samples to the largest fractional remainders (ties: lower rank first); then,
#   rank by rank from rank 0, a rank left with 0 gets 1 taken from the rank holding the most (ties: lower rank);
# - `loss_weight(b_r, global_batch, world)`: the factor on rank r's mean loss such that DDP's average of the
#   ranks' gradients equals the gradient of the mean loss over the whole global batch.
#
# Stuck? `hint("lab05.stragglers")`


# %% nbgrader={"grade": false, "grade_id": "stragglers_solution", "locked": false, "schema_version": 3, "solution": true}
def slowest_rank(spans: pd.DataFrame) -> int:
    """The rank with the largest median per-step compute seconds."""
    ### BEGIN SOLUTION
    compute = spans[spans["kind"] == "compute"].groupby("rank")["seconds"].median()
    return int(compute.idxmax())
    ### END SOLUTION


def rebalance(sec_per_sample: list[float], global_batch: int) -> list[int]:
    """Per-rank sample counts proportional to speed, each >= 1, summing to ``global_batch``."""
    ### BEGIN SOLUTION
    speed = [1.0 / t for t in sec_per_sample]
    share = [global_batch * s / sum(speed) for s in speed]
    sizes = [math.floor(x) for x in share]
    by_remainder = sorted(range(len(share)), key=lambda r: (-(share[r] - sizes[r]), r))
    for r in by_remainder[: global_batch - sum(sizes)]:
        sizes[r] += 1
    for r in range(len(sizes)):  # every rank keeps at least one sample: take it from the largest
        if sizes[r] == 0:
            sizes[r] = 1
            sizes[max(range(len(sizes)), key=lambda q: sizes[q])] -= 1
    return sizes
    ### END SOLUTION


def loss_weight(b_r: int, global_batch: int, world: int) -> float:
    """Factor on rank r's mean loss so that the all-reduced average gradient is the global-batch one."""
    ### BEGIN SOLUTION
    return world * b_r / global_batch  # mean_r * b_r / B summed over ranks = global mean; DDP divides by R
    ### END SOLUTION


# %%
straggler_table, straggler = lab05.experiment(rebalance, loss_weight, world=2, slow_rank=1, factor=2.0,
                                              batch=24, steps=pick(full=10, fast=4))
display(straggler_table)
print(f"rebalanced sizes {straggler['sizes']}; recovered {straggler['recovered']:.0%} of the what-if gain")

# %% nbgrader={"grade": true, "grade_id": "stragglers_tests", "locked": true, "points": 18, "schema_version": 3, "solution": false}
# equal totals, different compute: only compute names the straggler
demo = pd.DataFrame({"rank": [0, 0, 1, 1, 2, 2] * 2, "step": [0] * 6 + [1] * 6,
                     "kind": ["compute", "comm"] * 6,
                     "seconds": [0.01, 0.03, 0.01, 0.03, 0.04, 0.0] * 2})
assert slowest_rank(demo) == 2, \
    f"slowest_rank on a frame where rank 2 computes 4x longer: got {slowest_rank(demo)}, expected 2"
# planted outliers: the straggler is rank 0, the middle or the last; a fast rank has one GC pause mid-run (mean,
# max and sum name it) and another a slow first step (warm-up): only the median names the straggler
for slow in range(3):
    outliers = lab05.planted_spans(slow, world=3, steps=5)
    assert slowest_rank(outliers) == slow, f"straggler rank {slow}, a fast rank with one 0.5 s GC pause and one " \
        f"with a 0.2 s first step: slowest_rank gave {slowest_rank(outliers)}, expected {slow} (the median)"
measured = slowest_rank(straggler["before"]["spans"])
assert measured == 1, f"the measured run slowed rank 1, slowest_rank says {measured}"
assert rebalance([0.001, 0.002], 24) == [16, 8], \
    f"rebalance([0.001, 0.002], 24) = {rebalance([0.001, 0.002], 24)}, expected [16, 8]"
assert rebalance([1.0, 1.0, 1.0], 10) == [4, 3, 3], \
    f"ties -> lower rank: rebalance([1.0, 1.0, 1.0], 10) = {rebalance([1.0, 1.0, 1.0], 10)}, expected [4, 3, 3]"
assert rebalance([1.0, 3.0, 4.0], 12) == [8, 2, 2], f"shares 7.58, 2.53, 1.89 floor to 7, 2, 1: the 2 left go " \
    f"to the largest remainders (ranks 2 and 0), not to the fastest or the slowest ranks: rebalance([1.0, 3.0, " \
    f"4.0], 12) = {rebalance([1.0, 3.0, 4.0], 12)}, expected [8, 2, 2]"
assert rebalance([0.001, 1.0], 4) == [3, 1], \
    f"each rank keeps >= 1 sample: rebalance([0.001, 1.0], 4) = {rebalance([0.001, 1.0], 4)}, expected [3, 1]"
assert rebalance([0.001, 0.001, 1.0], 6) == [2, 3, 1], f"rank 2's sample comes from the lower of the tied " \
    f"ranks 0 and 1 (3 each): rebalance([0.001, 0.001, 1.0], 6) = {rebalance([0.001, 0.001, 1.0], 6)}, " \
    "expected [2, 3, 1]"
assert rebalance([1.1, 1.0, 100.0], 6) == [2, 3, 1], f"shares 2.84, 3.13, 0.03 -> [3, 3, 0]: rank 2's sample " \
    f"comes from the lower of the ranks holding the most (rank 0), not from the fastest (rank 1): rebalance(" \
    f"[1.1, 1.0, 100.0], 6) = {rebalance([1.1, 1.0, 100.0], 6)}, expected [2, 3, 1]"
assert rebalance([0.001, 1.0, 1.0], 3) == [1, 1, 1], \
    f"global batch = world: rebalance([0.001, 1.0, 1.0], 3) = {rebalance([0.001, 1.0, 1.0], 3)}, expected [1, 1, 1]"
assert rebalance([0.5], 7) == [7], f"one rank: rebalance([0.5], 7) = {rebalance([0.5], 7)}, expected [7]"
assert math.isclose(loss_weight(16, 24, 2), 4 / 3), \
    f"loss_weight(16, 24, 2) = {loss_weight(16, 24, 2)}, expected 16 x 2 / 24 = {4 / 3}"
gerr = float((straggler["after"]["grad"] - straggler["grad_ref"]).abs().max())
assert gerr < 1e-5, \
    f"rebalanced sizes {straggler['sizes']}: max |grad - global-batch grad| = {gerr:.3g} (want < 1e-5)"
### BEGIN HIDDEN TESTS
import random

from course_dist.evidence import Evidence, grading_seed

ev = Evidence("stragglers_tests")
rng = random.Random(grading_seed())
ev.equal("demo slowest", slowest_rank(demo))
ev.equal("measured slowest (world 2, rank 1)", measured)
# every class at every seed: the straggler first, middle and last at world 3 and 4, planted outliers drawn
for world in (3, 4):
    for slow in (0, world // 2, world - 1):
        spans = lab05.planted_spans(slow, world=world, steps=rng.choice([5, 7]), seed=rng.randrange(10**6))
        ev.equal(f"planted world {world} slow {slow}", {"slow": slow, "named": slowest_rank(spans)})
for args in [([0.001, 0.002], 24), ([1.0, 1.0, 1.0], 10), ([1.0, 3.0, 4.0], 12), ([0.001, 1.0], 4),
             ([0.001, 0.001, 1.0], 6), ([1.1, 1.0, 100.0], 6),
             ([0.001, 1.0, 1.0], 3), ([0.5], 7)]:
    ev.equal(f"rebalance {args}", rebalance(*args))
for _ in range(30):
    world = rng.randint(2, 4)
    args = ([rng.uniform(0.5, 4.0) for _ in range(world)], rng.randint(world, 64))
    ev.equal(f"rebalance {args}", rebalance(*args))
for world in (2, 3, 4):  # at every seed: an exact tie of remainders, and a rank whose share floors to 0
    t = rng.uniform(0.5, 4.0)
    ev.equal(f"rebalance tie world {world}", rebalance([t] * world, world * rng.randint(1, 9) + 1))
    fast = rng.uniform(0.001, 0.002)  # tied fast ranks: the donor is the lower of the tied largest
    ev.equal(f"rebalance floor-0 world {world}", rebalance([fast] * (world - 1) + [1.0], (world - 1) * rng.randint(2, 6)))
ev.close("loss_weight", [loss_weight(b, B, R) for b, B, R in [(16, 24, 2), (3, 10, 3), (1, 7, 4)]], rtol=1e-9)
ev.close("grad rebalanced world 2", straggler["after"]["grad"], atol=1e-5)
slow, sizes = 1, sorted(rng.randint(2, 9) for _ in range(3))  # the middle rank (world 2 measured the last)
sizes.insert(slow, sizes.pop())  # the slow rank also holds the most samples: its compute is the largest
hidden = lab05.run_straggler(sizes, slow_rank=slow, factor=3.0, steps=4, loss_weight=loss_weight)
ev.equal(f"measured slowest world 3 (slow rank {slow})", {"slow": slow, "named": slowest_rank(hidden["spans"])})
ev.close(f"grad world 3 sizes {sizes}", hidden["grad"], atol=1e-5)
# the recovered fraction is a timing: the table reports it, no grade depends on it (a loaded 2-core box
# gave the reference -2 %); graded is what the code decided from the measurement
ev.equal("rebalanced sizes of the measured run fill the batch", sum(straggler["sizes"]))
### END HIDDEN TESTS

# %% [markdown]
# **Written (4 points).** From the table: how long did the fast rank wait per step before rebalancing, and what
# fraction of the what-if gain did rebalancing recover? Why would rebalancing by *total* step time have found
# nothing to fix, and what else (besides moving samples) could you do about a rank that is slow for good?

# %% [markdown] nbgrader={"grade": true, "grade_id": "stragglers_written", "locked": false, "points": 4, "schema_version": 3, "solution": true}
# The fast rank waited about as long as the straggler's extra compute (≈ half of its step at 2×); rebalancing
# recovered most of the what-if gain (the table's fraction), limited by integer sizes and noise. Total step time
# is equal on every rank because the all-reduce synchronizes them, so it cannot rank them. For a rank that stays
# slow: replace or drain the node (elastic restart without it), or run asynchronous/local-SGD-style updates.
#
# === BEGIN MARK SCHEME ===
# 1: quotes the measured wait; 1: quotes the recovered fraction; 1: totals equalize because the collective waits
# for the slowest; 1: a sensible remedy beyond rebalancing (exclude/replace node, elastic restart, backup workers).
# === END MARK SCHEME ===

# %% [markdown]
# ## Exercise 3 — Scaling against quality and cost (18 points, ~15 min)
#
# Three small functions, then the measurements use them:
# - `efficiency(table)`: `table` has rows of two modes (`"strong"`: fixed global batch; `"weak"`: fixed batch per
#   rank) with columns `mode, world, samples_per_s`, in any order. Return a copy with a column `efficiency =
#   samples_per_s / (world × samples_per_s of the world-1 row of the same mode)`.
# - `noise_scale(g2_small, g2_big, b_small, b_big)`: from the mean squared gradient norms at two batch sizes,
#   McCandlish et al.'s unbiased estimates `|G|² = (b_big g2_big − b_small g2_small) / (b_big − b_small)` and
#   `tr(Σ) = (g2_small − g2_big) / (1/b_small − 1/b_big)`; return `{"g2": ..., "trace_sigma": ..., "b_simple":
#   tr(Σ) / |G|²}`.
# - `scaled_lr(base_lr, base_batch, batch, rule, step, warmup)`: the target `base_lr × k` (`rule="linear"`) or
#   `base_lr × √k` (`"sqrt"`), `k = batch / base_batch`, reached linearly from `base_lr` over `warmup` steps:
#   `base_lr + (target − base_lr) × min(1, step / warmup)` (`warmup=0`: the target at once); another rule:
#   `ValueError` naming it.
#
# Stuck? `hint("lab05.scaling")`


# %% nbgrader={"grade": false, "grade_id": "scaling_solution", "locked": false, "schema_version": 3, "solution": true}
def efficiency(table: pd.DataFrame) -> pd.DataFrame:
    """Copy of ``table`` with ``efficiency`` against the world-1 row of the same mode."""
    ### BEGIN SOLUTION
    out = table.copy()
    base = out[out["world"] == 1].set_index("mode")["samples_per_s"]
    out["efficiency"] = out["samples_per_s"] / (out["world"] * out["mode"].map(base))
    return out
    ### END SOLUTION


def noise_scale(g2_small: float, g2_big: float, b_small: float, b_big: float) -> dict:
    """Unbiased |G|^2, tr(Sigma) and B_simple from E|g|^2 at two batch sizes."""
    ### BEGIN SOLUTION
    g2 = (b_big * g2_big - b_small * g2_small) / (b_big - b_small)
    trace_sigma = (g2_small - g2_big) / (1 / b_small - 1 / b_big)
    return {"g2": g2, "trace_sigma": trace_sigma, "b_simple": trace_sigma / g2}
    ### END SOLUTION


def scaled_lr(base_lr: float, base_batch: int, batch: int, rule: str, step: int = 0, warmup: int = 0) -> float:
    """Learning rate at ``step`` for ``batch`` under the linear or square-root rule with linear warm-up."""
    ### BEGIN SOLUTION
    k = batch / base_batch
    if rule == "linear":
        target = base_lr * k
    elif rule == "sqrt":
        target = base_lr * math.sqrt(k)
    else:
        raise ValueError(f"rule must be 'linear' or 'sqrt', got {rule!r}")
    ramp = 1.0 if warmup <= 0 else min(1.0, step / warmup)
    return base_lr + (target - base_lr) * ramp
    ### END SOLUTION


# %% [markdown]
# Measured here (world 1 and 2, the straggler model without a straggler) and **simulated** on 8–64 ranks from an
# α–β fit of this machine's gloo all-reduce at world 2 (loopback, 2 shared CPU cores; a 6 M-parameter model,
# 4 ms of compute per sample per rank). The simulated rows say so, with their calibration: they are what this
# model predicts, not a measurement, and not what NCCL on GPUs would give.

# %%
steps_m = pick(full=8, fast=3)
measured_rows = []
for sizes, modes in [([24], ["strong"]), ([12], ["weak"]), ([12, 12], ["strong", "weak"])]:  # [12, 12]: both
    t = lab05.step_times(lab05.run_straggler(sizes, slow_rank=0, factor=1.0, steps=steps_m)["spans"])
    measured_rows += [{"mode": mode, "world": len(sizes), "samples_per_s": sum(sizes) / t["step"].max(),
                       "source": "measured"} for mode in modes]
ar = lab05.measure_allreduce(pick(full=[2**12, 2**16, 2**20, 2**22, 2**24], fast=[2**12, 2**18, 2**22]),
                             reps=pick(full=9, fast=3))
fit = lab05.fit_alpha_beta(ar)
calib = lab05.calibration(fit)
sim = pd.concat([lab05.simulate([1, 8, 16, 32, 64], "strong", 1024, fit),
                 lab05.simulate([1, 8, 16, 32, 64], "weak", 64, fit)]).assign(source="simulated")
scaling = pd.concat([efficiency(pd.DataFrame(measured_rows)), efficiency(sim)], ignore_index=True)
print(calib)
display(scaling[["source", "mode", "world", "samples_per_s", "efficiency"]])
_fig = lab05.plot_scaling_sim(scaling, calib)

# %% [markdown]
# The gradient noise scale, for free from data parallelism: each rank's own gradient is a batch-`b` estimate,
# the all-reduced one a batch-`R·b` estimate. Compared with the exact value from every per-sample gradient:

# %%
norms = lab05.grad_norms(b_small=32, world=2, draws=pick(full=1000, fast=300))
ns = noise_scale(norms["g2_small"], norms["g2_big"], norms["b_small"], norms["b_big"])
exact = lab05.true_noise_scale()
display(pd.DataFrame([{"estimate": "two batch sizes", **ns}, {"estimate": "exact (all samples)",
                      "g2": exact["g2"], "trace_sigma": exact["trace_sigma"], "b_simple": exact["b_simple"]}]))

# %% nbgrader={"grade": true, "grade_id": "scaling_tests", "locked": true, "points": 18, "schema_version": 3, "solution": false}
demo = pd.DataFrame({"mode": ["weak", "strong", "strong", "weak"], "world": [2, 2, 1, 1],
                     "samples_per_s": [150.0, 160.0, 100.0, 80.0]})
eff = efficiency(demo)
assert list(eff["efficiency"].round(4)) == [0.9375, 0.8, 1.0, 1.0], f"efficiency on {demo.to_dict('list')}: " \
    f"{list(eff['efficiency'])} (expected [0.9375, 0.8, 1.0, 1.0]: against the same mode's world-1 row)"
est = noise_scale(4 + 40 / 8, 4 + 40 / 32, 8, 32)  # |G|^2 = 4, tr(Sigma) = 40 -> B_simple = 10
assert all(math.isclose(est[k], v) for k, v in {"g2": 4.0, "trace_sigma": 40.0, "b_simple": 10.0}.items()), \
    f"noise scale from the planted statistics: got {est}, expected g2 4.0, trace_sigma 40.0, b_simple 10.0"
assert 0.3 < ns["b_simple"] / exact["b_simple"] < 3, f"measured B_simple {ns['b_simple']:.3g}, expected " \
    f"within 3x of the exact {exact['b_simple']:.3g} (ratio {ns['b_simple'] / exact['b_simple']:.3g})"
assert math.isclose(scaled_lr(0.1, 256, 1024, "linear", step=10, warmup=10), 0.4), \
    f"linear, warm-up done: got {scaled_lr(0.1, 256, 1024, 'linear', step=10, warmup=10)}, expected 0.4"
assert math.isclose(scaled_lr(0.1, 256, 1024, "sqrt"), 0.2), \
    f"sqrt rule, no warm-up: got {scaled_lr(0.1, 256, 1024, 'sqrt')}, expected 0.2"
assert math.isclose(scaled_lr(0.1, 256, 1024, "linear", step=5, warmup=10), 0.25), \
    f"half-way through warm-up: got {scaled_lr(0.1, 256, 1024, 'linear', step=5, warmup=10)}, expected 0.25"
assert math.isclose(scaled_lr(0.1, 256, 1024, "linear", step=30, warmup=10), 0.4), \
    f"after warm-up ends (step 30 of 10): got {scaled_lr(0.1, 256, 1024, 'linear', step=30, warmup=10)}, " \
    "expected the target 0.4"
assert math.isclose(scaled_lr(0.1, 256, 64, "sqrt", step=0, warmup=10), 0.1), \
    f"step 0 of the warm-up starts at base_lr: got {scaled_lr(0.1, 256, 64, 'sqrt', step=0, warmup=10)}, " \
    "expected 0.1"
try:
    lr_bad = scaled_lr(0.1, 256, 1024, "cubic")
    raise AssertionError(f"scaled_lr(rule='cubic') should raise ValueError, returned {lr_bad!r}")
except ValueError as exc:
    assert "cubic" in str(exc), f"the ValueError should name the rule 'cubic', got: {exc}"
### BEGIN HIDDEN TESTS
import random

from course_dist.evidence import Evidence, grading_seed

ev = Evidence("scaling_tests")
rng = random.Random(grading_seed())
ev.close("visible efficiency", torch.tensor(eff["efficiency"].to_numpy()), rtol=1e-9)
worlds = [1, 2, 4, 8]
rows = [{"mode": m, "world": w, "samples_per_s": rng.uniform(50, 500)} for m in ("weak", "strong") for w in worlds]
rng.shuffle(rows)
ev.close("hidden efficiency", torch.tensor(efficiency(pd.DataFrame(rows))["efficiency"].to_numpy()), rtol=1e-9)
ev.close("visible noise scale", est, rtol=1e-9)
for _ in range(5):
    g2, tr, bs = rng.uniform(0.5, 5), rng.uniform(5, 100), rng.choice([4, 8, 16])
    bb = bs * rng.choice([2, 4, 8])
    ev.close(f"noise scale g2={g2:.3f} tr={tr:.3f} b={bs},{bb}", noise_scale(g2 + tr / bs, g2 + tr / bb, bs, bb),
             rtol=1e-6)
ev.close("measured noise scale", ns, rtol=1e-4)
ev.close("scaled_lr", [scaled_lr(0.1, 256, b, rule, s, w) for b in (128, 1024, 4096) for rule in ("linear", "sqrt")
                       for s, w in ((0, 0), (0, 10), (3, 10), (10, 10), (20, 10))], rtol=1e-9)
w = rng.randint(5, 50)  # at every seed: before, at and after the end of a drawn warm-up
ev.close(f"scaled_lr warm-up {w}", [scaled_lr(0.1, 256, 1024, "linear", s, w) for s in (0, w // 2, w, 3 * w)],
         rtol=1e-9)
try:  # another bad rule at every seed: its name in the message
    refusal = f"no ValueError: returned {scaled_lr(0.1, 256, 1024, 'cosine', 3, 10)!r}"
except ValueError as exc:
    refusal = str(exc)
ev.rule("bad rule named", refusal, rule="common.contains", needles=["cosine"])
### END HIDDEN TESTS

# %% [markdown]
# ## Exercise 4 — Decide (20 points, ~25 min)
#
# `lab05.candidates` lists every (world, global batch) on the **simulated** cluster (the calibration above) with
# its step time, the steps to the target loss `S_min (1 + B_simple / B)` (McCandlish et al.; your noise scale),
# the time and the cost (`lab05.PRICE` $ per rank-hour). The choice is a simulated one; the timeouts below are
# measured.
#
# A collective timeout fires when *any* collective waits longer than it, and a healthy job waits in collectives
# for more than its steps: the first step's one-off costs (warm-up), the barrier while rank 0 writes a
# checkpoint, the barrier while rank 0 evaluates. `lab05.phase_seconds()` measures each on this machine (world
# 2). A timeout set from the step tail alone fires on the first checkpoint. So the timeout is set from the
# longest healthy wait, and is slow to catch a hang; fast detection is a separate **heartbeat watchdog**: a
# thread on each rank that declares a hang when no step has finished for `margin ×` the step tail, paused while
# the rank announces a checkpoint or eval (torch's `TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC` watches its own watchdog
# thread the same way; NVIDIA's resiliency extension times rank heartbeats and named sections such as a
# checkpoint separately). Write:
# - `choose(cands, deadline_s)`: the row (a dict) with the lowest `cost` among those with `time_s ≤ deadline_s`
#   (a row exactly at the deadline is in time; equal costs: fewer ranks, whatever the row order); none in time:
#   `ValueError` naming the deadline and the fastest `time_s`;
# - `collective_timeout(phase_s, margin)`: `phase_s` maps each phase (`"step"`, `"warmup"`, `"checkpoint"`,
#   `"eval"`, or any others) to its measured seconds; return `margin ×` the **longest** wait of any phase;
# - `heartbeat_deadline(step_s, margin)`: `margin ×` the **largest** measured step time (the tail, not the
#   typical step).
#
# Stuck? `hint("lab05.decide")`


# %% nbgrader={"grade": false, "grade_id": "decide_solution", "locked": false, "schema_version": 3, "solution": true}
def choose(cands: pd.DataFrame, deadline_s: float) -> dict:
    """Cheapest (world, global batch) that reaches the target within ``deadline_s``."""
    ### BEGIN SOLUTION
    ok = cands[cands["time_s"] <= deadline_s]
    if ok.empty:
        raise ValueError(f"no configuration reaches the target within {deadline_s} s: the fastest takes "
                         f"{cands['time_s'].min():.1f} s")
    return ok.sort_values(["cost", "world"], kind="stable").iloc[0].to_dict()
    ### END SOLUTION


def collective_timeout(phase_s: dict[str, list[float]], margin: float = 3.0) -> float:
    """``margin`` x the longest measured wait of any phase (step, warm-up, checkpoint, eval, ...)."""
    ### BEGIN SOLUTION
    return margin * max(max(waits) for waits in phase_s.values())
    ### END SOLUTION


def heartbeat_deadline(step_s: list[float], margin: float = 3.0) -> float:
    """``margin`` x the largest measured step time: no finished step for this long (outside an announced
    checkpoint or eval) is a hang."""
    ### BEGIN SOLUTION
    return margin * max(step_s)
    ### END SOLUTION


# %%
cands = lab05.candidates([1, 2, 4, 8, 16, 32, 64], [32, 64, 128, 256, 512, 1024, 2048], fit, ns["b_simple"])
fastest = float(cands["time_s"].min())
deadline_s = round(2.0 * fastest, 1)  # the course brief's deadline: twice the fastest possible time
plan = choose(cands, deadline_s)
phases = lab05.phase_seconds(steps=pick(full=60, fast=20), saves=pick(full=3, fast=1))
step_samples = phases["step"]
timeout_s = collective_timeout(phases)
heartbeat_s = heartbeat_deadline(step_samples)
lr = scaled_lr(0.05, 32, int(plan["global_batch"]), "sqrt", step=100, warmup=100)
display(cands.sort_values("cost").head(8))
print(f"{calib}\ndeadline {deadline_s} s -> simulated plan {plan}; lr {lr:.3g}")
display(pd.DataFrame([{"phase": k, "measured max_s": max(v), "n": len(v), "old rule 3x step tail fires":
                       max(v) > 3 * max(step_samples)} for k, v in phases.items()]))
print(f"collective timeout {timeout_s:.2f} s; heartbeat deadline {heartbeat_s:.3f} s (measured, world 2)")
_fig = lab05.plot_step_tail(phases, timeout_s, heartbeat_s)

# %% [markdown]
# **The solution card.** Latency: the chosen configuration's *simulated* step time (s/step); cost: its
# *simulated* cost to the target ($) — both notes say "simulated" and give the calibration; capacity: your
# measured critical batch B_simple (samples/step: `ns["b_simple"]`, the estimate the plan used, not the exact
# value, within 1 %) beyond which more data parallelism buys little; fallback: the
# collective timeout (s), with the heartbeat deadline that detects a hang first stated in its note (the note
# names the heartbeat and gives its deadline in seconds, e.g. `0.123 s`: the test reads that number back).

# %% nbgrader={"grade": false, "grade_id": "card_solution", "locked": false, "schema_version": 3, "solution": true}
### BEGIN SOLUTION
card = SolutionCard(
    lab="lab05",
    latency=Limit(float(plan["step_s"]), "s/step",
                  f"world {int(plan['world'])}, global batch {int(plan['global_batch'])}; {calib}"),
    cost=Limit(float(plan["cost"]), "$ to target",
               f"simulated: {lab05.PRICE} $/rank-hour x {plan['steps']:.0f} simulated steps"),
    capacity=Limit(float(ns["b_simple"]), "samples/step", "measured critical batch (B_simple) of the lab's task"),
    fallback=Limit(float(timeout_s), "s collective timeout",
                   f"3x the longest measured healthy wait ({max(phases, key=lambda k: max(phases[k]))}); hangs "
                   f"are caught first by a heartbeat watchdog after {heartbeat_s:.3f} s without a finished step "
                   "(3x the step tail, paused during checkpoint and eval); then restart"),
    justification=(
        f"Cheapest simulated configuration meeting the {deadline_s} s deadline: world {int(plan['world'])} at "
        f"global batch {int(plan['global_batch'])}, {plan['cost']:.3g} $ (simulated from the world-2 gloo fit). "
        f"Beyond B_simple ~ {ns['b_simple']:.0f} samples per step more workers mostly buy wasted samples, and "
        "the all-reduce latency grows with the ring. The collective timeout clears the longest healthy wait "
        "(a checkpoint or eval barrier), so it never fires on a healthy job; the heartbeat catches a hang within "
        "3 step tails."),
)
### END SOLUTION
card

# %% nbgrader={"grade": true, "grade_id": "decide_tests", "locked": true, "points": 12, "schema_version": 3, "solution": false}
toy = pd.DataFrame({"world": [1, 2, 4, 8], "global_batch": [64] * 4, "time_s": [400.0, 220.0, 120.0, 70.0],
                    "cost": [1.0, 1.1, 1.2, 1.6]})
assert choose(toy, 250.0)["world"] == 2, f"deadline 250 s: cheapest in time is world 2, got {choose(toy, 250.0)}"
assert type(choose(toy, 250.0)) is dict, f"choose returns the row as a dict, got a {type(choose(toy, 250.0)).__name__}"
assert choose(toy, 1e9)["world"] == 1, \
    f"no deadline pressure: the cheapest overall is world 1, got {choose(toy, 1e9)}"
assert choose(toy, 120.0)["world"] == 4, \
    f"deadline 120 s = world 4's time_s (in time): expected world 4, got {choose(toy, 120.0)}"
tie = pd.DataFrame({"world": [8, 4, 2], "global_batch": [64] * 3, "time_s": [70.0, 120.0, 220.0],
                    "cost": [1.2, 1.2, 1.5]})
assert choose(tie, 250.0)["world"] == 4, \
    f"worlds 8 and 4 cost 1.2 (world 8 listed first): fewer ranks wins, expected world 4, got {choose(tie, 250.0)}"
try:
    too_fast = choose(toy, 12.5)
    raise AssertionError(f"choose(deadline 12.5 s) should raise ValueError (nothing is that fast), returned "
                         f"{too_fast}")
except ValueError as exc:
    assert "70" in str(exc) and "12.5" in str(exc), \
        f"the ValueError should name the deadline (12.5 s) and the fastest time (70 s), got: {exc}"
tail = [0.01] * 25 + [0.05] + [0.01] * 25  # the tail step mid-run: neither the first nor the last
toy_phases = {"step": tail, "warmup": [0.2], "checkpoint": [0.6, 0.9], "eval": [0.5]}
assert math.isclose(collective_timeout(toy_phases, 3.0), 2.7), f"timeout for {toy_phases}: " \
    f"{collective_timeout(toy_phases, 3.0)} (expected 2.7 = 3 x the 0.9 s checkpoint, the longest wait)"
assert math.isclose(collective_timeout({"step": tail}, 2.0), 0.1), \
    f"only steps measured: expected 2 x the 50 ms tail = 0.1, got {collective_timeout({'step': tail}, 2.0)}"
other = {"step": tail, "checkpoint": [0.9], "restore": [1.5]}  # "or any others": a phase not named above
assert math.isclose(collective_timeout(other, 3.0), 4.5), \
    f"timeout for {other}: expected 4.5 = 3 x the 1.5 s restore, got {collective_timeout(other, 3.0)}"
assert math.isclose(heartbeat_deadline(tail, 3.0), 0.15), \
    f"heartbeat for a 50 ms tail mid-run: expected 0.15 = 3 x 0.05, got {heartbeat_deadline(tail, 3.0)}"
longest = max(max(v) for v in phases.values())
assert timeout_s > longest, f"timeout {timeout_s} s is below the longest measured healthy wait {longest} s"
assert max(step_samples) < heartbeat_s < timeout_s, f"heartbeat {heartbeat_s} s should sit above the step " \
    f"tail {max(step_samples)} s and below the collective timeout {timeout_s} s"
for field in ("latency", "cost"):
    assert "simulated" in getattr(card, field).note, f"card.{field}.note must say it is simulated: " \
        f"{getattr(card, field).note!r}"
assert "heartbeat" in card.fallback.note, f"card.fallback.note must state the heartbeat deadline: " \
    f"{card.fallback.note!r}"
stated = lab05.seconds_in(card.fallback.note)
assert any(math.isclose(x, heartbeat_s, rel_tol=0.25) for x in stated), f"card.fallback.note should give the " \
    f"heartbeat deadline, {heartbeat_s:.3f} s (within 25 %); the note states {stated} s: {card.fallback.note!r}"
assert math.isclose(card.capacity.value, ns["b_simple"], rel_tol=0.01), f"card.capacity should be your measured " \
    f"B_simple {ns['b_simple']:.4g} (within 1 %; the exact value is {exact['b_simple']:.4g}), got {card.capacity.value}"
course_dist.check_card(card, measured={"latency": float(plan["step_s"]), "cost": float(plan["cost"]),
                                       "capacity": float(ns["b_simple"]), "fallback": float(timeout_s)})
### BEGIN HIDDEN TESTS
import random

from course_dist.evidence import Evidence, grading_seed

ev = Evidence("decide_tests")
rng = random.Random(grading_seed())
ev.equal("toy choices", [int(choose(toy, d)["world"]) for d in (250.0, 1e9, 130.0, 120.0, 70.0)])
ev.equal("tie choice", int(choose(tie, 250.0)["world"]))
for i in range(3):  # at every seed: a deadline exactly at a row's time, and a cost tie listed larger world first
    worlds = [16, 8, 4, 2, 1]
    times = sorted(rng.uniform(10, 500) for _ in worlds)
    costs = [round(rng.uniform(1, 3), 1) for _ in worlds]
    costs[1] = costs[2] = min(costs) - 0.1  # worlds 8 and 4 tie, cheapest
    t = pd.DataFrame({"world": worlds, "global_batch": [64] * 5, "time_s": times, "cost": costs})
    ev.equal(f"boundary/tie choice {i}", [int(choose(t, d)["world"]) for d in (times[2], times[1], times[3])])
for i in range(10):
    t = pd.DataFrame({"world": [1, 2, 4, 8, 16], "global_batch": [rng.choice([64, 256])] * 5,
                      "time_s": sorted((rng.uniform(10, 500) for _ in range(5)), reverse=True),
                      "cost": [rng.uniform(1, 3) for _ in range(5)]})
    d = rng.uniform(5, 400)
    try:
        got = int(choose(t, d)["world"])
    except ValueError:
        got = "ValueError"
    ev.equal(f"hidden choice {i}", got)
ev.close("toy timeouts", [collective_timeout(toy_phases, m) for m in (2.0, 3.0, 5.0)], rtol=1e-9)
ev.close("toy heartbeats", [heartbeat_deadline(tail, m) for m in (2.0, 3.0, 5.0)], rtol=1e-9)
ev.close("other phase", collective_timeout(other, 3.0), rtol=1e-9)
steps_drawn = [rng.uniform(0.01, 0.02) for _ in range(20)]
steps_drawn[rng.randrange(1, 19)] = 0.2  # at every seed: the tail neither first nor last
ev.close("hidden heartbeat", heartbeat_deadline(steps_drawn, 3.0), rtol=1e-9)
for i in range(5):
    drawn = {k: [rng.uniform(0.01, 2.0) for _ in range(rng.randint(1, 4))] for k in rng.sample(list(toy_phases),
                                                                                                rng.randint(1, 4))}
    ev.close(f"hidden timeout {i}", collective_timeout(drawn, 3.0), rtol=1e-9)
ev.rule("timeout above every measured healthy wait", {"timeout": float(timeout_s), "phase_s": phases},
        rule="lab05.timeout_covers_phases", margin=3.0)
ev.rule("heartbeat above the measured step tail", {"timeout": float(heartbeat_s), "step_s": step_samples},
        rule="lab05.timeout_above_tail", margin=3.0)
ev.rule("card notes: simulated latency and cost, heartbeat in the fallback",
        [card.latency.note, card.cost.note, card.fallback.note], rule="common.contains",
        needles=["simulated", "simulated", "heartbeat"])
ev.rule("card fallback note states the heartbeat deadline", {"note": card.fallback.note, "value": float(heartbeat_s)},
        rule="lab05.states_seconds", rtol=0.25)
ev.rule("card capacity is the measured B_simple", {"value": float(card.capacity.value),
                                                  "measured": float(ns["b_simple"])}, rule="lab05.near", rtol=0.01)
ev.rule("plan meets the deadline", {"plan_time_s": float(plan["time_s"]), "deadline_s": float(deadline_s)},
        rule="lab05.meets_deadline")
ev.rule("card", {"card": dataclasses.asdict(card),
                 "measured": {"latency": float(plan["step_s"]), "cost": float(plan["cost"]),
                              "capacity": float(ns["b_simple"]), "fallback": float(timeout_s)}},
        rule="common.card", rtol=0.25)
### END HIDDEN TESTS

# %% [markdown]
# **Written (8 points).** Justify the card from *your* numbers: why this world size and global batch rather than
# more workers (quote the *simulated* efficiency at 8–64 ranks, saying it is simulated and from what
# calibration, and your measured B_simple), what the LR scaling rule and warm-up would be at your global batch,
# why your collective timeout cannot fire on a healthy job (which measured wait sets it) and why the old rule,
# 3 × the step tail, would have, and how fast the heartbeat catches a hang.

# %% [markdown] nbgrader={"grade": true, "grade_id": "card_justification", "locked": false, "points": 8, "schema_version": 3, "solution": true}
# The chosen (world, batch) is the cheapest that meets the deadline in the simulation (α–β fit of gloo at world 2
# on this 2-core machine, 4 ms/sample of compute: a model, not a measurement); above B_simple the steps to target
# stop falling (S ≈ S_min), so each extra worker adds cost and all-reduce latency (simulated strong-scaling
# efficiency drops well below 1 at 32–64 ranks). At the chosen batch the sqrt rule (or linear below B_simple)
# with a warm-up of ~100 steps sets the LR. The collective timeout is 3× the longest measured healthy wait, the
# checkpoint barrier (72 MB with fsync): 3× the step tail would have been shorter than that one save and killed a
# healthy job at its first checkpoint. Hangs are caught by the heartbeat instead, within 3 step tails (a fraction
# of a second here).
#
# === BEGIN MARK SCHEME ===
# 2: quotes efficiency at 8–64 labelled as simulated (with its calibration: gloo α–β fit at world 2 on this
# machine) and where it falls; 2: uses B_simple to explain why larger batches stop
# paying; 1: LR rule + warm-up at the chosen batch; 2: the collective timeout set by the longest measured healthy
# wait (checkpoint/eval, with the number) and why 3x the step tail would fire; 1: the heartbeat's detection
# latency (a number).
# === END MARK SCHEME ===


# %% [markdown]
# ## Stretch A — Uneven inputs (10 points, ~15 min, optional)
#
# When ranks hold different numbers of batches, the rank that runs out stops calling DDP's gradient
# all-reduce and the others hang in it (you diagnosed `uneven_epoch` above). Write `run_epoch(ddp, opt,
# batches, strategy)` — it runs on every rank with that rank's list of `(x, y)` batches (each rank has at least
# one) and a fresh DDP model — and returns the number of steps this rank ran:
# - `"join"`: torch's `Join` context manager with the **DDP model as its joinable**; ranks that run out shadow
#   the others' all-reduces (their contribution is zero, DDP still divides by the world size);
# - `"drop_last"`: every rank runs the **global minimum** number of batches (agree on it with one collective);
# - `"pad"`: every rank runs the **global maximum**; a rank out of data steps on `lab05.dummy_batch()` with
#   loss weight 0 (`lab05.sgd_step(ddp, opt, x, y, weight=0.0)`), so it contributes a zero gradient;
# - anything else: `ValueError` naming the strategy.
#
# One step is `lab05.sgd_step(ddp, opt, x, y)`. The test compares every rank's final parameters with a
# single-process reference of each strategy (join and pad: the same numbers) at world 3 and world 2.
#
# Stuck? `hint("lab05.uneven")`


# %% nbgrader={"grade": false, "grade_id": "uneven_solution", "locked": false, "schema_version": 3, "solution": true}
def run_epoch(ddp: torch.nn.Module, opt: torch.optim.Optimizer, batches: list, strategy: str) -> int:
    """One epoch over this rank's ``batches`` that cannot hang when ranks hold different counts."""
    ### BEGIN SOLUTION
    if strategy == "join":
        with Join([ddp]):  # DDP is the joinable: it knows which all-reduces to shadow
            for x, y in batches:
                lab05.sgd_step(ddp, opt, x, y)
        return len(batches)
    if strategy in ("drop_last", "pad"):
        n = torch.tensor([len(batches)])
        dist.all_reduce(n, op=dist.ReduceOp.MIN if strategy == "drop_last" else dist.ReduceOp.MAX)
        n = int(n)
        for i in range(n):
            real = i < len(batches)
            x, y = batches[i] if real else lab05.dummy_batch()
            lab05.sgd_step(ddp, opt, x, y, weight=1.0 if real else 0.0)
        return n
    raise ValueError(f"strategy must be 'join', 'drop_last' or 'pad', got {strategy!r}")
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "uneven_tests", "locked": true, "points": 10, "schema_version": 3, "solution": false}
def check_uneven(counts):
    out = lab05.run_uneven(run_epoch, counts, timeout=15)
    for strategy, per_rank in out.items():
        want = lab05.uneven_reference(strategy, counts)
        for r, o in enumerate(per_rank):
            err = lab05.params_close(o["params"], want)
            assert err < 1e-5, \
                f"{strategy}, counts {counts}, rank {r}: max |params - reference| = {err:.3g} (want < 1e-5)"
    steps = {s: [o["steps"] for o in per_rank] for s, per_rank in out.items()}
    assert steps["join"] == list(counts), f"join steps {steps['join']}, expected each rank's count {counts}"
    assert steps["drop_last"] == [min(counts)] * len(counts), \
        f"counts {counts}: drop_last steps {steps['drop_last']}, expected {[min(counts)] * len(counts)}"
    assert steps["pad"] == [max(counts)] * len(counts), \
        f"counts {counts}: pad steps {steps['pad']}, expected {[max(counts)] * len(counts)}"
    return out


uneven_visible = {"3 ranks": check_uneven([4, 2, 4]), "2 ranks": check_uneven([1, 3])}  # a tie at the max
try:
    bad_steps = run_epoch(None, None, [], "shuffle")
    raise AssertionError(f"run_epoch(strategy='shuffle') should raise ValueError, returned {bad_steps!r}")
except ValueError as exc:
    assert "shuffle" in str(exc), f"the ValueError should name the strategy 'shuffle', got: {exc}"
### BEGIN HIDDEN TESTS
import random

from course_dist.evidence import Evidence, grading_seed

ev = Evidence("uneven_tests")
rng = random.Random(grading_seed())


def record(tag, counts, out):
    for strategy, per_rank in out.items():
        ev.close(f"{tag} {counts} {strategy} params", [o["params"] for o in per_rank], atol=1e-5)
        ev.equal(f"{tag} {counts} {strategy} steps", [o["steps"] for o in per_rank])


record("visible", [4, 2, 4], uneven_visible["3 ranks"])
record("visible", [1, 3], uneven_visible["2 ranks"])
k, d = rng.randint(1, 3), rng.randint(1, 2)  # at every seed: the shortest rank last, a tie at the maximum
for counts in ([k + d, k + d, k], [k + d, k]):
    record("hidden", counts, check_uneven(counts))
try:  # another unknown strategy at every seed: its name in the message
    refusal = f"no ValueError: returned {run_epoch(None, None, [], 'round_robin')!r}"
except ValueError as exc:
    refusal = str(exc)
ev.rule("unknown strategy named", refusal, rule="common.contains", needles=["round_robin"])
### END HIDDEN TESTS

# %% [markdown]
# What does Join cost? Rank 0's seconds per step with equal inputs (plain DDP) and with Join when rank 1 runs
# out half-way (rank 1 then shadows every all-reduce, plus Join's own "who is still active" all-reduce per step):

# %%
join_cost = lab05.join_overhead(steps=pick(full=60, fast=20))
display(pd.DataFrame([join_cost]))


# %% [markdown]
# ## Stretch B — Read a flight-recorder dump (5 points, ~10 min, optional)
#
# In Exercise 1's table torch's flight recorder named the culprit of all six hangs, the DDP one included (the
# lab's Python trace sees that one only through a stack): it records DDP's C++ bucket all-reduces too. Here you
# read its dumps yourself. The cell below runs the eight hangs once more at world 3 with `TORCH_FR_BUFFER_SIZE`
# set (gloo, a 2 s collective timeout: on gloo a rank can dump only once its stuck collective has timed out)
# and reads each rank's dump into plain records. `dump["entries"][r]` is rank r's list of entries `{"group",
# "seq", "op", "sizes", "frames"}`: the process group's name (`"0"` is the default group), the collective's
# number within that group (from 1), the op, the input sizes, and the Python frames at the call (innermost
# first, each `{"file", "line", "name"}`).
#
# Write `fr_culprit(entries)` returning `{"rank", "group", "seq", "op", "line"}`:
# - key every entry by `(group, seq)` (each group numbers its own collectives: DDP's buckets run on the default
#   group, the hang's logged loss on a group of its own) and walk the keys with the **default group `"0"`
#   first**, then the other groups, each in seq order;
# - at each key a rank's signature is its entry's `(op, sizes)`, or nothing when it has no entry there; the
#   **first** key where the three signatures are not all equal is the divergence (`"group"`, `"seq"`);
# - the culprit (`"rank"`) is the rank whose signature no other rank shares (at world 3 the other two agree);
#   `"op"` is the culprit's op **at that key** (its divergent entry, not its last one: `async_extra`'s culprit
#   went on to record a barrier), `"line"` the line (an `int`) of that entry's **innermost** frame in the
#   planted file (`frame["file"]` ends with `"hangs.py"`; frames are innermost first, so a helper's line comes
#   before the line that called it); both `None` when the culprit has no entry at that key (a rank stuck
#   outside any collective, say in its data loader, while the others entered one).
#
# Stuck? `hint("lab05.frdump")`

# %%
fr_cases = [(case, (culprit + 1) % lab05.WORLD) for case, culprit in visible_cases]  # other culprits than Ex. 1
fr = lab05.fr_dumps(fr_cases, pg_timeout=2.0)
print({d["case"]: {r: len(es) for r, es in d["entries"].items()} for d in fr})  # entries per rank
ddp_dump = fr[5]
display(pd.DataFrame([{"rank": r, **{k: e[k] for k in ("group", "seq", "op", "sizes")},
                       "frames": [f"{f['name']}:{f['line']}" for f in e["frames"][:3]]}
                      for r, es in ddp_dump["entries"].items() for e in es]))


# %% nbgrader={"grade": false, "grade_id": "frdump_solution", "locked": false, "schema_version": 3, "solution": true}
def fr_culprit(entries: dict[int, list[dict]]) -> dict:
    """``{"rank", "group", "seq", "op", "line"}`` of the first disagreement in the ranks' flight-recorder
    entries (rules above)."""
    ### BEGIN SOLUTION
    by_key = {r: {(e["group"], e["seq"]): e for e in es} for r, es in entries.items()}
    # the default group first: a hang on a side group (a logged loss) follows from one on the main group
    keys = sorted(set().union(*by_key.values()), key=lambda k: (k[0] != "0", k[0], k[1]))
    for key in keys:
        sig = {r: repr((es[key]["op"], es[key]["sizes"])) if key in es else None for r, es in by_key.items()}
        if len(set(sig.values())) > 1:
            rank = next(r for r, s in sig.items() if list(sig.values()).count(s) == 1)
            e = by_key[rank].get(key)  # None: the culprit never reached this collective
            if e is None:
                return {"rank": rank, "group": key[0], "seq": key[1], "op": None, "line": None}
            line = next(f["line"] for f in e["frames"] if f["file"].endswith("hangs.py"))
            return {"rank": rank, "group": key[0], "seq": key[1], "op": e["op"], "line": line}
    raise ValueError("the ranks' flight-recorder entries agree: no divergence")
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "frdump_tests", "locked": true, "points": 5, "schema_version": 3, "solution": false}
for d in fr:
    case, want = f"{d['case']} (culprit rank {d['culprit']})", lab05.fr_truth(d["case"], d["culprit"], d["dir"])
    got = fr_culprit(d["entries"])
    assert (got.get("group"), got.get("seq")) == (want["group"], want["seq"]), f"{case}: the first " \
        f"disagreement is (group, seq) {(want['group'], want['seq'])}, fr_culprit gave {(got.get('group'), got.get('seq'))}"
    assert got.get("rank") == want["rank"], \
        f"{case}: the odd one out is rank {want['rank']}, fr_culprit named rank {got.get('rank')!r}"
    assert got.get("op") == want["op"], f"{case}: the culprit's op there is {want['op']!r}, got {got.get('op')!r}"
    assert type(got.get("line")) is int and got["line"] == want["line"], \
        f"{case}: the culprit's line in hangs.py is the int {want['line']!r}, got {got.get('line')!r}"
moved = {(r + 1) % lab05.WORLD: es for r, es in fr[0]["entries"].items()}  # the dumps of ranks 0, 1, 2 as 1, 2, 0
got_moved, want_moved = fr_culprit(moved).get("rank"), (fr[0]["culprit"] + 1) % lab05.WORLD
assert got_moved == want_moved, f"{fr[0]['case']} with rank r's dump read as rank r + 1's (keys 1, 2, 0): " \
    f"the culprit is the key rank {want_moved}, fr_culprit named {got_moved!r}"
# the culprit with no entry at the divergence: extra_collective's dumps with the culprit's last entry (its extra
# all_reduce) cut, as if it were stuck outside any collective when the others entered the barrier
cut = {r: es[:-1] if r == fr[0]["culprit"] else es for r, es in fr[0]["entries"].items()}
want_cut = {**lab05.fr_truth(fr[0]["case"], fr[0]["culprit"], fr[0]["dir"]), "op": None, "line": None}
got_cut = fr_culprit(cut)
assert got_cut == want_cut, f"{fr[0]['case']} with the culprit's entry at the divergence cut: expected " \
    f"{want_cut} (op and line None: it has no entry there), fr_culprit gave {got_cut!r}"
### BEGIN HIDDEN TESTS
from course_dist.evidence import Evidence, grading_seed

ev = Evidence("frdump_tests")
shift = 1 + grading_seed() % (lab05.WORLD - 1)  # at every seed: every dump again with its ranks relabelled
for d in fr:
    ev.equal(f"{d['case']}", {"culprit": d["culprit"], "diagnosis": fr_culprit(d["entries"])})
    relabelled = {(r + shift) % lab05.WORLD: es for r, es in d["entries"].items()}
    ev.equal(f"{d['case']} ranks relabelled", {"culprit": (d["culprit"] + shift) % lab05.WORLD,
                                                "diagnosis": fr_culprit(relabelled)})
for d in fr:  # every dump with the culprit's entries from the divergence on cut (no entry there), relabelled
    want = lab05.fr_truth(d["case"], d["culprit"], d["dir"])
    cut = {(r + shift) % lab05.WORLD: [e for e in es if r != d["culprit"] or (e["group"], e["seq"]) !=
                                       (want["group"], want["seq"])] for r, es in d["entries"].items()}
    ev.equal(f"{d['case']} culprit's entry cut", fr_culprit(cut))
### END HIDDEN TESTS
