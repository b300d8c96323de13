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
# # Lab 02 - DDP under the hood
#
# **Thesis.** DDP is *replicated local training held together by a strict collective contract*: every rank
# holds the **same parameters**, does **matched backward work** (the same collectives in the same order),
# reads a **partition** of the data, and applies the **averaged gradients**. Break any clause and the job
# either trains a different model than you think or hangs.
#
# You will build each clause yourself, check it against `torch.nn.parallel.DistributedDataParallel` and
# `torch.utils.data.DistributedSampler`, break it on purpose, and finally *measure* what the naive, the
# bucketed and torch's DDP cost on this machine - and write down the decision on a solution card.
#
# Everything runs as real processes in a real `torch.distributed` process group (gloo on a laptop, NCCL on a
# GPU node; the code is the same: tensors go to `course_dist.device()`). `course_dist.launch(fn,
# world_size=2)` runs `fn` on every rank and returns the per-rank results; a rank that raises is reported by
# rank, a hang becomes a `LaunchTimeout` with every rank's stack.
#
# Stuck? `hint("lab02.<exercise>")` shows the next of three hints (nudge, approach, near-solution). Grading
# runs this notebook with `COURSE_FAST=1` (smaller sizes); `pick(full=..., fast=...)` chooses them.

# %%
import math
from contextlib import contextmanager

import pandas as pd
import torch
import torch.distributed as dist
from IPython.display import display
from torch import nn

import course_dist
from course_dist import LaunchTimeout, hint, launch, pick
from course_dist.labkit import lab02
from course_dist.labkit.lab02 import MB, ContractViolation, fingerprint

pd.set_option("display.precision", 4)
print("fast mode:", course_dist.fast_mode(), "| lab model:", lab02.model_config())

# %% [markdown]
# ## Exercise 1 - Partitioned data
#
# Each rank must train on a *different* slice of every epoch, all slices together covering the dataset.
# `DistributedSampler` does this with three rules worth knowing by heart: shuffle with a generator seeded by
# `seed + epoch` (so every rank computes the *same* permutation without talking), pad to a multiple of the
# world size by repeating the head (or truncate with `drop_last`), and deal the indices out **interleaved**
# (`indices[rank::world]`), not in contiguous blocks.
#
# Write `rank_indices` so that it returns exactly `list(DistributedSampler(...))` for every combination.

# %%
hint("lab02.sampler")


# %% nbgrader={"grade": false, "grade_id": "sampler_solution", "locked": false, "schema_version": 3, "solution": true}
def rank_indices(n: int, world_size: int, rank: int, *, shuffle: bool = True, seed: int = 0, epoch: int = 0,
                 drop_last: bool = False) -> list[int]:
    """Indices of a dataset of length ``n`` that ``rank`` (of ``world_size``) reads in ``epoch``.

    Must equal ``list(DistributedSampler(range(n), world_size, rank, shuffle=shuffle, seed=seed,
    drop_last=drop_last))`` after ``set_epoch(epoch)``.
    """
    ### BEGIN SOLUTION
    if drop_last and n % world_size != 0:
        # drop the tail so that every rank gets the same count: floor(n / world) each
        num_samples = math.ceil((n - world_size) / world_size)
    else:
        num_samples = math.ceil(n / world_size)
    total = num_samples * world_size
    if shuffle:
        # seed + epoch: every rank computes the same permutation; a new one each epoch
        g = torch.Generator()
        g.manual_seed(seed + epoch)
        indices = torch.randperm(n, generator=g).tolist()
    else:
        indices = list(range(n))
    if drop_last:
        indices = indices[:total]
    else:
        pad = total - len(indices)
        # repeat the head, wrapping again when the pad is longer than the data (n < world)
        reps = math.ceil(pad / len(indices)) if indices else 0
        indices += (indices * reps)[:pad]
    return indices[rank:total:world_size]  # interleaved: rank r takes r, r+R, r+2R, ...
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "sampler_tests", "locked": true, "points": 12, "schema_version": 3, "solution": false}
from torch.utils.data import DistributedSampler


def torch_indices(n, world, rank, shuffle=True, seed=0, epoch=0, drop_last=False):
    s = DistributedSampler(range(n), num_replicas=world, rank=rank, shuffle=shuffle, seed=seed,
                           drop_last=drop_last)
    s.set_epoch(epoch)
    return list(s)


for n, world, shuffle, drop_last in [(10, 3, False, False), (10, 3, True, False), (10, 3, True, True),
                                     (12, 4, True, False), (5, 2, False, True)]:
    for r in range(world):
        got = rank_indices(n, world, r, shuffle=shuffle, seed=7, epoch=2, drop_last=drop_last)
        want = torch_indices(n, world, r, shuffle, 7, 2, drop_last)
        assert got == want, f"n={n} world={world} rank={r} shuffle={shuffle} drop_last={drop_last}: " \
            f"{got} != {want}"
assert rank_indices(10, 3, 1, shuffle=True, epoch=0) != rank_indices(10, 3, 1, shuffle=True, epoch=1), \
    "the epoch must change the order"
### BEGIN HIDDEN TESTS
import random

rng = random.Random(0)
for _ in range(200):
    n, world = rng.randint(0, 40), rng.randint(1, 7)
    kw = dict(shuffle=rng.random() < 0.7, seed=rng.randint(0, 99), epoch=rng.randint(0, 5),
              drop_last=rng.random() < 0.5)
    for r in range(world):
        got = rank_indices(n, world, r, **kw)
        want = torch_indices(n, world, r, kw["shuffle"], kw["seed"], kw["epoch"], kw["drop_last"])
        assert got == want, f"n={n} world={world} rank={r} {kw}: {got} != {want}"
for n, world in [(1, 4), (2, 7), (3, 8)]:  # padding longer than the data wraps around again
    assert [rank_indices(n, world, r, shuffle=False) for r in range(world)] == \
        [torch_indices(n, world, r, False) for r in range(world)]
### END HIDDEN TESTS

# %% [markdown]
# **Measure 1a - forgetting `set_epoch`.** Without it every epoch replays epoch 0's permutation, so each rank
# sees the *same* 1/R of the data forever. The table shows the fraction of the dataset each rank has seen
# after each epoch, with and without the epoch in the seed.
#
# **Measure 1b - padding duplicates in evaluation.** A distributed eval over
# `DistributedSampler(shuffle=False)` scores the padded duplicates twice. The table compares the accuracy
# computed that way with the true accuracy of 30 held-out samples, for several world sizes.

# %%
coverage = lab02.epoch_coverage(rank_indices, n=1000, world=4, epochs=4)
display(coverage.pivot(index="epoch", columns="set_epoch", values="mean fraction of data seen per rank"))
padding = lab02.padded_eval(rank_indices, lab02.eval_correctness(n=30), worlds=[1, 2, 4, 7, 8, 16])
display(padding)

# %% [markdown] nbgrader={"grade": true, "grade_id": "sampler_written", "locked": false, "points": 4, "schema_version": 3, "solution": true}
# **Written (4 points).** From the two tables: what fraction of the data does each rank see after 4 epochs
# with and without `set_epoch`, and why? Which world sizes distort the eval accuracy, by how much, and what
# would you do about it in an evaluation loop?
#
# === BEGIN MARK SCHEME ===
# With `set_epoch`, each rank's coverage grows every epoch (about 1 - (3/4)^4 = 68 % of the data after 4
# epochs at world 4); without it, it stays at 25 %: the permutation depends only on `seed + epoch`, so the
# same quarter is replayed. Padding changes the metric whenever 30 % R != 0 (world 4, 7, 8, 16 here): the
# duplicated head samples count twice (here about +1 point at world 4/8/16, -0.5 at world 7; the sign depends
# on whether the duplicated samples are right). With few eval samples per rank and many ranks it gets worse.
# Fix: `drop_last` is wrong for eval (it drops samples); evaluate unpadded shards (e.g.
# `indices[rank:n:world]`) and all-reduce the (correct, count) sums, or de-duplicate before the metric.
# === END MARK SCHEME ===

# %% [markdown]
# ## Exercise 2 - Same parameters
#
# DDP averages *gradients*, never parameters: if the replicas start different they stay different forever. So
# DDP broadcasts rank 0's state at construction. "State" is parameters **and buffers** (running statistics,
# fixed random projections...), including frozen parameters. Below, every rank is seeded differently before
# building the model; after your broadcast all must hold rank `src`'s values - in place, because an optimizer
# may already hold references to these very tensors.

# %%
hint("lab02.broadcast")


# %% nbgrader={"grade": false, "grade_id": "broadcast_solution", "locked": false, "schema_version": 3, "solution": true}
def broadcast_model(model: nn.Module, src: int = 0) -> None:
    """Overwrite, in place, every parameter and buffer of ``model`` with rank ``src``'s values (a collective:
    every rank calls it)."""
    ### BEGIN SOLUTION
    with torch.no_grad():
        # Buffers too: a BatchNorm's running stats or LabNet's input scale are state, not parameters.
        for t in [*model.parameters(), *model.buffers()]:
            dist.broadcast(t, src=src)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "broadcast_tests", "locked": true, "points": 8, "schema_version": 3, "solution": false}
def check_broadcast(world, src):
    res = launch(lab02.broadcast_check, world_size=world, args=(broadcast_model, src), timeout=60)
    before = [r["before"] for r in res]
    assert before[0] != before[1], "test setup: ranks should start different"
    for r, out in enumerate(res):
        after = out["after"]
        assert after["params"] == before[src]["params"], f"rank {r}: parameters {after} != rank {src}'s"
        assert after["buffers"] == before[src]["buffers"], f"rank {r}: buffers differ from rank {src}'s"
        assert out["same_objects"], f"rank {r}: parameters were replaced, not overwritten in place"


check_broadcast(world=2, src=0)
### BEGIN HIDDEN TESTS
check_broadcast(world=3, src=1)
### END HIDDEN TESTS

# %% [markdown]
# ## Exercise 3 - Averaged gradients, the naive way
#
# After `backward()` each rank holds the gradient of *its* shard's loss. The mean loss over the global batch
# has the mean of those as its gradient, so: all-reduce (sum) every gradient and divide by the world size. Two
# traps:
# - a **frozen** parameter (`requires_grad=False`) has no gradient anywhere: skip it;
# - an **unused** parameter (not in this step's graph) has `.grad is None`. If one rank skips it and another
#   does not, their collectives no longer match and the job hangs. Decide *together* (one small all-reduce of
#   "who has a gradient"), then reduce it everywhere it was used somewhere, and leave it untouched (`None`)
#   where it was used nowhere - so the optimizer (weight decay included) does not move it.
#
# The tests train a few steps and compare with one process on the global batch, and with torch DDP.

# %%
hint("lab02.allreduce")


# %% nbgrader={"grade": false, "grade_id": "allreduce_solution", "locked": false, "schema_version": 3, "solution": true}
def average_gradients(model: nn.Module) -> None:
    """After ``backward()``: replace every trainable parameter's ``.grad`` by its average over all ranks.
    Frozen parameters are skipped; a parameter unused on every rank keeps ``grad=None``; one used on some
    ranks only gets the average with zeros from the others (as DDP with ``find_unused_parameters=True``)."""
    ### BEGIN SOLUTION
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        return
    world = dist.get_world_size()
    # one tiny collective so every rank agrees which parameters need a reduction (same collectives everywhere)
    used = torch.tensor([float(p.grad is not None) for p in params], device=params[0].device)
    dist.all_reduce(used)
    for p, n_used in zip(params, used.tolist(), strict=True):
        if n_used == 0:
            continue  # unused on every rank: keep None so the optimizer skips it
        if p.grad is None:
            p.grad = torch.zeros_like(p)  # unused here, used elsewhere: contribute zero
        dist.all_reduce(p.grad)  # SUM
        p.grad.div_(world)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "allreduce_tests", "locked": true, "points": 14, "schema_version": 3, "solution": false}
# Tolerance vs one process: the global-batch mean and the mean of per-rank means differ only by float32
# rounding (summation order); 4 SGD steps keep that below 1e-5. Against torch DDP at world 2 the arithmetic is
# identical (a+b is commutative; /2 is exact), so we demand bitwise equality.
steps = 4
naive = launch(lab02.train_naive, world_size=2, args=(average_gradients,), kwargs={"steps": steps},
               timeout=60)
ddp = launch(lab02.train_torch_ddp, world_size=2, kwargs={"steps": steps}, timeout=60)
single = lab02.train_single(world=2, steps=steps)
init = lab02.train_single(world=2, steps=0)
assert lab02.max_abs_diff(naive[0], naive[1]) == 0, "replicas diverged"
err = lab02.max_abs_diff(naive[0], single)
assert err < 1e-5, f"naive DDP vs one process on the global batch: max |diff| = {err:.3g} (want < 1e-5)"
err = lab02.max_abs_diff(naive[0], ddp[0])
assert err == 0, f"naive DDP vs torch DDP: max |diff| = {err:.3g} (want bitwise equal)"
for name in ("frozen.weight", "aux.weight", "aux.bias"):
    assert torch.equal(naive[0][name], init[name]), f"{name} changed but it is frozen/unused"
assert bool(naive[0]["aux_grad_is_none"]), "an unused parameter's grad must stay None"
### BEGIN HIDDEN TESTS
# used on rank 0 only: must neither hang nor differ from DDP(find_unused_parameters=True)
naive = launch(lab02.train_naive, world_size=2, args=(average_gradients,),
               kwargs={"steps": 3, "unused": "rank0"}, timeout=20)
ddp = launch(lab02.train_torch_ddp, world_size=2, kwargs={"steps": 3, "unused": "rank0"}, timeout=60)
assert lab02.max_abs_diff(naive[1], ddp[1]) < 1e-6, "aux used on rank 0 only: differs from torch DDP"
# world 3: division by 3 is not exact, so a tolerance
naive = launch(lab02.train_naive, world_size=3, args=(average_gradients,), kwargs={"steps": 3}, timeout=60)
err = lab02.max_abs_diff(naive[2], lab02.train_single(world=3, steps=3))
assert err < 1e-5, f"world 3: max |diff| vs one process = {err:.3g}"
### END HIDDEN TESTS

# %% [markdown]
# ## Exercise 4 - Ring all-reduce from send/recv
#
# How does `all_reduce` move the bytes? The bandwidth-optimal answer is a ring: split the tensor into R
# chunks; **reduce-scatter** (R-1 steps: send one chunk to the right neighbour, receive one from the left and
# add it; after that rank r owns the full sum of chunk r+1) then **all-gather** (R-1 steps passing the
# finished chunks around). Each rank sends 2(R-1)/R of the tensor whatever R is - that is why nccl-tests
# report *bus bandwidth* = bytes/time x 2(R-1)/R.
#
# Write it with point-to-point `dist.isend` / `dist.recv` only. It must be right for any length (not divisible
# by R, even shorter than R) and any world size >= 1 (world 1: nothing to do).

# %%
hint("lab02.ring")


# %% nbgrader={"grade": false, "grade_id": "ring_solution", "locked": false, "schema_version": 3, "solution": true}
def ring_all_reduce(t: torch.Tensor) -> torch.Tensor:
    """Sum the contiguous tensor ``t`` over all ranks, in place, with a ring of send/recv; returns ``t``."""
    ### BEGIN SOLUTION
    world, rank = dist.get_world_size(), dist.get_rank()
    if world == 1:
        return t
    # tensor_split: R views covering any length (the first len % R chunks are one longer; some may be empty)
    chunks = list(torch.tensor_split(t.view(-1), world))
    right, left = (rank + 1) % world, (rank - 1) % world
    scratch = torch.empty_like(chunks[0])

    def exchange(send: torch.Tensor, recv: torch.Tensor) -> None:
        # isend first, then recv: a blocking send on every rank at once could deadlock on a full ring.
        # Every rank knows every chunk's size, so empty chunks are skipped on both sides consistently.
        req = dist.isend(send, right) if send.numel() else None
        if recv.numel():
            dist.recv(recv, left)
        if req is not None:
            req.wait()

    for s in range(world - 1):  # reduce-scatter
        send_i, recv_i = (rank - s) % world, (rank - s - 1) % world
        buf = scratch[: chunks[recv_i].numel()]
        exchange(chunks[send_i], buf)
        chunks[recv_i].add_(buf)
    for s in range(world - 1):  # all-gather: pass the finished chunks around
        send_i, recv_i = (rank + 1 - s) % world, (rank - s) % world
        exchange(chunks[send_i], chunks[recv_i])
    return t
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ring_tests", "locked": true, "points": 14, "schema_version": 3, "solution": false}
def check_ring(world, lengths):
    res = launch(lab02.ring_check, world_size=world, args=(ring_all_reduce, lengths), timeout=60)
    for n in lengths:
        want = sum(lab02.ring_input(n, r) for r in range(world))
        for r in range(world):
            got = res[r][n]
            assert got.shape == want.shape and torch.allclose(got, want, atol=1e-5), \
                f"world {world}, length {n}, rank {r}: max |diff| {(got - want).abs().max() if n else 0}"
            assert torch.equal(got, res[0][n]), f"world {world}, length {n}: rank {r} differs from rank 0"


check_ring(2, [1, 2, 7, 1000])
check_ring(1, [5])
### BEGIN HIDDEN TESTS
check_ring(3, [0, 1, 2, 3, 4, 5, 11, 1001])
check_ring(2, [0, 3, 4097])
### END HIDDEN TESTS

# %% [markdown]
# **Measure 4 - bus bandwidth.** Your ring against gloo's own all-reduce at world 2, message sizes up to 16 MB
# (1 MB in fast mode), with the alpha-beta model time = 2(R-1)(alpha + bytes/R * beta) fitted to your ring.
# Small messages are latency-bound (alpha), large ones bandwidth-bound (beta): the reason DDP packs gradients
# into buckets.

# %%
sizes = pick(full=[4 << 10, 64 << 10, 1 << 20, 4 << 20, 16 << 20], fast=[4 << 10, 64 << 10, 1 << 20])
busbw = lab02.measure_busbw(ring_all_reduce, world=2, sizes_bytes=sizes, reps=pick(full=5, fast=3))
display(busbw.pivot(index="bytes", columns="impl", values="busbw_GBps"))
_fig = lab02.plot_busbw(busbw, world=2)

# %% [markdown]
# ## Exercise 5 - Bucketed, overlapped DDP
#
# The naive version waits for the whole backward, then sends one message per parameter: every message pays
# alpha, and the network idles while backward computes. DDP instead
# 1. groups parameters into **buckets** in *reverse* registration order (the order gradients become ready in
#    backward), closing a bucket once it holds at least the limit: the first bucket is small (1 MB: start
#    talking early), the rest hold `bucket_cap_mb` (25 MB: few messages);
# 2. registers a **post-accumulate-grad hook** on each parameter; when the last gradient of a bucket arrives
#    it launches an **async** all-reduce of the flattened bucket - while backward keeps computing earlier
#    layers; buckets are launched strictly in bucket order, so every rank issues the same collectives in the
#    same order;
# 3. **waits** for all of them before the optimizer step and copies the averaged bucket back into `.grad`;
# 4. inside **`no_sync()`** the hooks launch nothing (gradient accumulation); the first backward after it
#    reduces the accumulated gradients.
#
# First `assign_buckets` (plain Python, checked against torch's own
# `dist._compute_bucket_assignment_by_size`), then the wrapper. Like DDP with `find_unused_parameters=False`,
# it may assume every trainable parameter gets a gradient each step.

# %%
hint("lab02.bucketed")


# %% nbgrader={"grade": false, "grade_id": "buckets_solution", "locked": false, "schema_version": 3, "solution": true}
def assign_buckets(sizes: list[int], cap_bytes: int, first_cap_bytes: int) -> list[list[int]]:
    """Group parameters (``sizes[i]`` bytes, registration order) into buckets, listed in launch order.

    Walk the parameters in reverse; add each to the current bucket; close it as soon as it holds >= its limit
    (``first_cap_bytes`` for the first bucket, ``cap_bytes`` after). Indices inside a bucket in walking
    order (last parameter first)."""
    ### BEGIN SOLUTION
    buckets, current, filled, limit = [], [], 0, first_cap_bytes
    for i in reversed(range(len(sizes))):  # reverse: gradients of the last layers are ready first
        current.append(i)
        filled += sizes[i]
        if filled >= limit:
            buckets.append(current)
            current, filled, limit = [], 0, cap_bytes
    if current:
        buckets.append(current)
    return buckets
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "bucketed_solution", "locked": false, "schema_version": 3, "solution": true}
class BucketedDDP(nn.Module):
    """Data-parallel wrapper: bucketed gradient all-reduce overlapped with backward (the optimized version of
    exercise 3's naive ``average_gradients``). Replicas must already be identical (exercise 2).

    Use: ``ddp = BucketedDDP(model)``; ``ddp(x).backward()``; ``ddp.finish_gradient_synchronization()``;
    ``opt.step()``. ``self.buckets`` is ``assign_buckets`` over the trainable parameters."""

    def __init__(self, module: nn.Module, bucket_cap_mb: float = 25.0, first_bucket_mb: float = 1.0) -> None:
        super().__init__()
        self.module = module
        ### BEGIN SOLUTION
        self.params = [p for p in module.parameters() if p.requires_grad]
        sizes = [p.numel() * p.element_size() for p in self.params]
        self.buckets = assign_buckets(sizes, int(bucket_cap_mb * MB), int(first_bucket_mb * MB))
        self._bucket_of = {i: b for b, members in enumerate(self.buckets) for i in members}
        self._sync = True
        self._reset()
        for i, p in enumerate(self.params):
            # fires after the gradient is accumulated into p.grad, i.e. when p's gradient is final for this
            # backward
            p.register_post_accumulate_grad_hook(lambda p, i=i: self._on_grad_ready(i))
        ### END SOLUTION

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _on_grad_ready(self, i: int) -> None:
        ### BEGIN SOLUTION
        if not self._sync:
            return  # no_sync(): accumulate locally, no collective
        self._missing[self._bucket_of[i]] -= 1
        # launch ready buckets strictly in order: all ranks must issue the same collectives in the same order
        while self._next < len(self.buckets) and self._missing[self._next] == 0:
            members = self.buckets[self._next]
            flat = torch.cat([self.params[j].grad.reshape(-1) for j in members])
            flat.div_(dist.get_world_size())  # pre-divide like DDP: the sum of averages is the average
            self._work.append((members, flat, dist.all_reduce(flat, async_op=True)))
            self._next += 1
        ### END SOLUTION

    def _reset(self) -> None:
        self._missing = [len(b) for b in self.buckets]
        self._next, self._work = 0, []

    def finish_gradient_synchronization(self) -> None:
        """Wait for every bucket's all-reduce and write the averages back into ``.grad`` (call before the
        step)."""
        ### BEGIN SOLUTION
        if self._next != len(self.buckets):
            self._reset()
            raise RuntimeError(f"only {self._next} of {len(self.buckets)} buckets were launched: a trainable "
                               "parameter got no gradient (unused parameter?)")
        for members, flat, work in self._work:
            work.wait()
            offset = 0
            for j in members:
                g = self.params[j].grad
                g.copy_(flat[offset:offset + g.numel()].view_as(g))
                offset += g.numel()
        self._reset()
        ### END SOLUTION

    @contextmanager
    def no_sync(self):
        """Gradient accumulation: inside, backward launches no collective."""
        ### BEGIN SOLUTION
        previous, self._sync = self._sync, False
        try:
            yield
        finally:
            self._sync = previous
        ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "bucketed_tests", "locked": true, "points": 20, "schema_version": 3, "solution": false}
def torch_buckets(sizes, cap, first):
    # torch's own bucketing (what DDP's reducer uses when it rebuilds buckets in gradient-ready order): it
    # walks the tensors in the order given and records tensor_indices, so hand it the reversed list
    order = list(reversed(range(len(sizes))))
    tensors = [torch.empty(sizes[i] // 4) for i in order]
    return dist._compute_bucket_assignment_by_size(tensors, [first, cap], [], order)[0]


sizes = lab02.trainable_sizes("lab")
for cap, first in [(25 * MB, MB), (MB // 2, MB // 8), (1, 1)]:
    assert assign_buckets(sizes, cap, first) == torch_buckets(sizes, cap, first), f"cap={cap} first={first}"

# structure, world 2, tiny model, small caps so that it has several buckets; 2 micro-batches per step
cap_mb, first_mb = 0.004, 0.001
want = torch_buckets(lab02.trainable_sizes("tiny"), int(cap_mb * MB), int(first_mb * MB))
numels = [s // 4 for s in lab02.trainable_sizes("tiny")]
want_numels = [sum(numels[i] for i in b) for b in want]
assert len(want) >= 3
kw = {"steps": 2, "accum": 2, "bucket_cap_mb": cap_mb, "first_bucket_mb": first_mb}
res = launch(lab02.train_bucketed, world_size=2, args=(BucketedDDP,), kwargs=kw, timeout=60, trace=True)
for rank, out in enumerate(res):
    for rec in out["records"]:
        if not rec["sync"]:
            assert rec["n_calls"] == 0, f"rank {rank}: {rec['n_calls']} collectives inside no_sync()"
            continue
        assert rec["numels"] == want_numels, \
            f"rank {rank}: bucket sizes in launch order {rec['numels']} != {want_numels}"
        assert rec["all_async"], f"rank {rank}: bucket all-reduces must be async_op=True"
        assert rec["n_at_backward_end"] >= 1 and rec["first_start_before_bwd_end"], \
            f"rank {rank}: no collective started before backward ended (no overlap): {rec}"
# the course_dist trace, independently: all-reduces per rank = steps x buckets, and each step's first one was
# issued before that step's backward() returned (wall clock, shared by all processes on this machine)
ar = res.trace[res.trace["op"] == "all_reduce"]
per_rank = ar.groupby("rank").size().tolist()
assert per_rank == [kw["steps"] * len(want)] * 2, f"trace: all_reduces per rank {per_rank} != steps x buckets"
for rank, out in enumerate(res):
    starts = ar[ar["rank"] == rank].sort_values("seq")["t_start"].tolist()
    ends = [rec["t_backward_end_wall"] for rec in out["records"] if rec["sync"]]
    for k, t_end in enumerate(ends):
        first = starts[k * len(want)]
        assert first < t_end, \
            f"trace, rank {rank}, step {k}: first all_reduce {first - t_end:+.4f} s after backward"
ddp_kw = {"steps": 2, "accum": 2, "unused": "none"}
ref = launch(lab02.train_torch_ddp, world_size=2, kwargs=ddp_kw, timeout=60)
err = lab02.max_abs_diff(res[0]["state"], ref[0])
assert err == 0, f"bucketed DDP with no_sync accumulation vs torch DDP: max |diff| {err:.3g} (want bitwise)"
### BEGIN HIDDEN TESTS
import random

rng = random.Random(1)
for _ in range(50):
    sizes = [4 * rng.randint(1, 5000) for _ in range(rng.randint(1, 30))]
    cap, first = 4 * rng.randint(1, 8000), 4 * rng.randint(1, 3000)
    assert assign_buckets(sizes, cap, first) == torch_buckets(sizes, cap, first), (sizes, cap, first)
res = launch(lab02.train_bucketed, world_size=3, args=(BucketedDDP,), kwargs=kw, timeout=60)
ref = launch(lab02.train_torch_ddp, world_size=3, kwargs=ddp_kw, timeout=60)
err = lab02.max_abs_diff(res[2]["state"], ref[2])
assert err < 1e-6, f"world 3: bucketed vs torch DDP max |diff| {err:.3g}"
### END HIDDEN TESTS

# %% [markdown]
# ## Exercise 6 - Break the contract, then catch it
#
# A broken contract rarely crashes; it silently trains the wrong model or hangs. The cheapest guard is a
# **fingerprint check**: every rank reduces what must be identical to a few numbers (`lab02.fingerprint`: sum,
# sum of squares, a position-weighted sum, in float64), gathers everybody's, and compares with rank 0. Write
# `check_replicas`: it must raise `ContractViolation(name, ranks)` naming *exactly* the ranks that differ from
# rank 0 - bitwise, because replicas that are "close" today drift apart tomorrow.
#
# Then it meets three planted bugs (in `lab02`): different init seeds and no broadcast; a restarted rank that
# skips `set_epoch`; and a rank-dependent unused parameter under torch DDP, which does not raise at all: it
# **hangs**, and `launch`'s timeout turns the hang into a `LaunchTimeout` with every rank's stack.

# %%
hint("lab02.contract")


# %% nbgrader={"grade": false, "grade_id": "contract_solution", "locked": false, "schema_version": 3, "solution": true}
def check_replicas(name: str, tensors: list[torch.Tensor]) -> None:
    """Collective: raise ``ContractViolation(name, ranks)`` on every rank if any rank's
    ``fingerprint(tensors)`` differs (bitwise) from rank 0's; ``ranks`` lists those ranks in increasing
    order."""
    ### BEGIN SOLUTION
    mine = fingerprint(tensors).to(course_dist.device())
    everyone = [torch.empty_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(everyone, mine)
    diverged = [r for r, fp in enumerate(everyone) if not torch.equal(fp, everyone[0])]
    if diverged:
        detail = "; ".join(f"rank {r}: {everyone[r].tolist()}" for r in [0, *diverged])
        raise ContractViolation(name, diverged, detail)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "contract_tests", "locked": true, "points": 12, "schema_version": 3, "solution": false}
assert launch(lab02.clean_check, world_size=2, args=(check_replicas,), timeout=30) == [[], []], \
    "identical replicas must pass the check"
named = launch(lab02.bug_no_broadcast, world_size=2, args=(check_replicas,), timeout=30)
assert named == [[1], [1]], f"bug 1 (no broadcast): every rank should name [1], got {named}"
found = launch(lab02.bug_skip_set_epoch, world_size=2, args=(check_replicas,), timeout=30)
assert found[0]["ranks"] == [1] and found[0]["epoch"] == 1, f"bug 2 (skipped set_epoch): {found[0]}"
try:
    launch(lab02.bug_unused_param, world_size=2, args=(check_replicas,), timeout=6)
    raise AssertionError("bug 3 (unused parameter) should hang, but the launch finished")
except LaunchTimeout as exc:
    hang = exc
assert "backward" in hang.stacks[0], "bug 3: rank 0 should be stuck in backward"
print(f"bug 3 caught: {type(hang).__name__} after {hang.timeout} s; rank 1 last collective: "
      f"{hang.last_collective.get(1)}")
### BEGIN HIDDEN TESTS
named = launch(lab02.bug_no_broadcast, world_size=3, args=(check_replicas,), timeout=30)
assert named == [[1, 2]] * 3, f"world 3, bug 1: {named}"
found = launch(lab02.bug_skip_set_epoch, world_size=3, args=(check_replicas,), timeout=30)
assert found[0]["ranks"] == [2], f"world 3, bug 2: {found[0]}"
named = launch(lab02.one_ulp_check, world_size=3, args=(check_replicas,), timeout=30)
assert named == [[2]] * 3, f"a one-ulp difference on rank 2 must be caught exactly: {named}"
### END HIDDEN TESTS

# %% [markdown]
# What the three bugs did to the job (the consequence of bug 2 is duplicated and skipped samples, measured):

# %%
bug1 = launch(lab02.bug_no_broadcast, world_size=2, args=(check_replicas,))[0]
bug2 = launch(lab02.bug_skip_set_epoch, world_size=2, args=(check_replicas,))[0]
display(pd.DataFrame([
    {"planted bug": "different init seeds, no broadcast",
     "caught as": f"ContractViolation naming ranks {bug1}",
     "consequence": "replicas train different models forever (gradients are averaged, parameters never)"},
    {"planted bug": "restarted rank skips set_epoch",
     "caught as": f"ContractViolation naming ranks {bug2['ranks']} at epoch {bug2['epoch']}",
     "consequence": f"{bug2['seen twice']} samples seen twice, {bug2['never seen']} never, that epoch"},
    {"planted bug": "rank-dependent unused parameter", "caught as": f"LaunchTimeout after {hang.timeout} s",
     "consequence": "rank 0 waits in backward for a bucket rank 1 never sends: the job hangs"},
]))
print(str(hang)[:1500])

# %% [markdown]
# ## Exercise 7 - Measure and decide
#
# Which data-parallel implementation should this course's training job use, at what world size? Measured here:
# step time of naive (exercise 3), bucketed (exercise 5) and torch DDP at world 1 and 2 on the lab model, then
# a bucket-size sweep. Write `summarize` (throughput, scaling efficiency, cost) and `max_params_per_rank`
# (capacity), then fill in the solution card from the numbers.
#
# Definitions: `samples_per_s = world * batch_per_rank / step_s`; `efficiency = samples_per_s / (world *
# samples_per_s of the same impl at world 1)`; `core_s_per_1k = 1000 * world * threads_per_rank * step_s /
# (world * batch_per_rank)` (the cores you pay for, busy or not). Memory per parameter of fp32 DDP training: 4
# bytes weight + 4 gradient + 4 bucket copy (0 with `gradient_as_bucket_view=True`) + optimizer state (SGD 0,
# SGD-momentum 4, Adam 8).
#
# World 4 is optional: add it to `worlds` below if your machine has at least 4 cores (on 2 cores it only
# measures oversubscription).

# %%
hint("lab02.measure")

# %%
batch = pick(full=64, fast=32)
impls = {"naive": {"impl": "naive", "average_gradients": average_gradients},
         "bucketed": {"impl": "bucketed", "ddp_cls": BucketedDDP},
         "torch DDP": {"impl": "torch"}}
steps, rounds = pick(full=6, fast=3), pick(full=3, fast=1)  # rounds: interleaved repeats, median
raw = lab02.measure_ddp(impls, worlds=[1, 2], steps=steps, batch=batch, rounds=rounds)
sweep = lab02.measure_ddp({f"{mb} MB": {"impl": "bucketed", "ddp_cls": BucketedDDP, "bucket_cap_mb": mb}
                           for mb in pick(full=[0.05, 0.25, 1.0, 4.0, 25.0], fast=[0.05, 25.0])},
                          worlds=[2], steps=steps, batch=batch, rounds=rounds)
sweep["bucket_cap_mb"] = [float(s.split()[0]) for s in sweep["impl"]]
display(raw)


# %% nbgrader={"grade": false, "grade_id": "measure_solution", "locked": false, "schema_version": 3, "solution": true}
def summarize(raw: pd.DataFrame, threads_per_rank: int = 1) -> pd.DataFrame:
    """``raw`` has columns impl, world, batch_per_rank, step_s (NaN where a run failed). Return a copy with
    the columns samples_per_s, efficiency and core_s_per_1k added (definitions above)."""
    ### BEGIN SOLUTION
    out = raw.copy()
    out["samples_per_s"] = out["world"] * out["batch_per_rank"] / out["step_s"]
    base = out[out["world"] == 1].set_index("impl")["samples_per_s"]
    out["efficiency"] = out["samples_per_s"] / (out["world"] * out["impl"].map(base))
    out["core_s_per_1k"] = 1000 * threads_per_rank * out["step_s"] / out["batch_per_rank"]
    return out
    ### END SOLUTION


def max_params_per_rank(budget_bytes: float, optimizer: str = "sgd_momentum",
                        gradient_as_bucket_view: bool = False) -> int:
    """Largest parameter count whose fp32 DDP training state fits ``budget_bytes`` per rank (activations
    excluded). ``optimizer``: "sgd", "sgd_momentum" or "adam"; anything else raises ValueError naming it."""
    ### BEGIN SOLUTION
    state = {"sgd": 0, "sgd_momentum": 4, "adam": 8}
    if optimizer not in state:
        raise ValueError(f"optimizer must be one of {sorted(state)}, got {optimizer!r}")
    per_param = 4 + 4 + (0 if gradient_as_bucket_view else 4) + state[optimizer]
    return int(budget_bytes // per_param)
    ### END SOLUTION


# %%
table = summarize(raw)
display(table)
display(sweep[["bucket_cap_mb", "step_s", "error"]].rename(columns={"step_s": "step_s (world 2, bucketed)"}))
_fig = lab02.plot_step_times(table, sweep)

# %% [markdown]
# **The solution card.** Fill it from the numbers above for the configuration with the best measured
# throughput (samples/s): its latency (seconds per step), cost (core-seconds per 1k samples), capacity
# (largest model per rank under a stated memory budget: 8 GiB per rank, Adam) and fallback (what DDP alone
# does when a rank dies - measured below: rank 1 is SIGKILLed at step 3 of a torch DDP job).

# %%
drill = lab02.kill_drill()
display(pd.DataFrame([drill]))

# %% nbgrader={"grade": false, "grade_id": "card_solution", "locked": false, "schema_version": 3, "solution": true}
from course_dist.card import Limit, SolutionCard

### BEGIN SOLUTION
ok = table.dropna(subset=["step_s"])
choice = ok.sort_values("samples_per_s", ascending=False).iloc[0]  # best throughput measured on this machine
budget = 8 * 2**30
card = SolutionCard(
    lab="lab02",
    latency=Limit(float(choice["step_s"]), "s/step",
                  f"{choice['impl']} at world {int(choice['world'])}, "
                  f"batch {int(choice['batch_per_rank'])} per rank"),
    cost=Limit(float(choice["core_s_per_1k"]), "core-s per 1k samples",
               f"scaling efficiency at world 2: {ok[ok['world'] == 2]['efficiency'].max():.2f}"),
    capacity=Limit(float(max_params_per_rank(budget, "adam")), "parameters per rank",
                   "fp32 DDP + Adam under 8 GiB per rank, activations excluded; every rank holds the full "
                   "model"),
    fallback=Limit(float(drill["detect_s"]), "s until the job stops after a rank dies",
                   "DDP alone cannot continue: survivors fail in the next collective, the job ends, progress "
                   "since the last checkpoint is lost (lab 04)"),
    justification=(
        f"{choice['impl']} at world {int(choice['world'])} gave the best measured throughput "
        f"({choice['samples_per_s']:.0f} samples/s); scaling efficiency at world 2 was "
        f"{ok[ok['world'] == 2]['efficiency'].max():.2f} on this shared 2-core box, so extra ranks buy "
        "little here. Every rank holds the whole model, so capacity is one replica's memory; beyond it use "
        "ZeRO/FSDP, and for a dying rank add checkpoints and elastic restart (lab 04)."),
)
### END SOLUTION
card

# %% nbgrader={"grade": true, "grade_id": "measure_tests", "locked": true, "points": 8, "schema_version": 3, "solution": false}
demo = pd.DataFrame({"impl": ["a", "a", "b", "b"], "world": [1, 2, 1, 2], "batch_per_rank": [10, 10, 10, 10],
                     "step_s": [0.1, 0.125, 0.2, float("nan")]})
s = summarize(demo)
assert math.isclose(s.loc[1, "samples_per_s"], 160) and math.isclose(s.loc[1, "efficiency"], 0.8), s
assert math.isclose(s.loc[1, "core_s_per_1k"], 12.5), s
assert max_params_per_rank(16e6, "sgd_momentum") == 1_000_000
assert "step_s" in table and table["samples_per_s"].notna().any()
best = table.dropna(subset=["step_s"]).sort_values("samples_per_s").iloc[-1]  # the best measured throughput
course_dist.check_card(card, measured={"latency": float(best["step_s"]), "cost": float(best["core_s_per_1k"]),
                                       "capacity": float(max_params_per_rank(8 * 2**30, "adam"))})
### BEGIN HIDDEN TESTS
s = summarize(demo, threads_per_rank=2)
assert math.isclose(s.loc[0, "core_s_per_1k"], 20.0) and math.isclose(s.loc[2, "efficiency"], 1.0), s
assert math.isnan(s.loc[3, "samples_per_s"]) and math.isnan(s.loc[3, "efficiency"])
assert max_params_per_rank(16e6, "sgd_momentum", gradient_as_bucket_view=True) == 1_333_333
assert max_params_per_rank(2**30, "adam") == 2**30 // 20 and max_params_per_rank(100, "sgd") == 8
try:
    max_params_per_rank(1e9, "lion")
    raise AssertionError("unknown optimizer must raise ValueError")
except ValueError as exc:
    assert "lion" in str(exc)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": true, "grade_id": "card_justification", "locked": false, "points": 8, "schema_version": 3, "solution": true}
# **Justification (8 points).** Which implementation and world size would you run on this machine, and why -
# quote the step times, the scaling efficiency and the bucket-sweep optimum. When would the answer change
# (more compute per byte, a faster network, more cores)? What does the capacity number leave out, and what
# happens to this job when one rank dies?
#
# === BEGIN MARK SCHEME ===
# Full marks: quotes measured step times for the three implementations at world 1 and 2; states efficiency < 1
# on 2 shared cores (the course brief's "more devices, slower" in miniature) and picks the fastest measured
# option with that caveat; identifies that naive pays one latency per parameter and no overlap, bucketed ~
# torch DDP; names the bucket-sweep optimum (tiny buckets pay alpha per message, one huge bucket loses
# overlap); says DP helps when compute per byte communicated grows (bigger batch/model, NVLink/NCCL); capacity
# excludes activations and is bounded by full replication (-> ZeRO/FSDP); a dead rank stops the whole job (no
# elastic recovery in DDP; lab 04).
# === END MARK SCHEME ===
