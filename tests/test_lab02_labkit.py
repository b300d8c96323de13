"""Fast unit tests of lab 02's machinery (course_dist/labkit/lab02/) and judge rules - never of the exercises'
answers.

    .venv/bin/python -m pytest tests/test_lab02_labkit.py -q
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.distributed as dist
from torch.utils.data import DistributedSampler

from autograder.judges import lab02 as judge
from course_dist import launch
from course_dist.labkit import lab02


def torch_rank_indices(n, world_size, rank, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    """torch's own sampler with the exercise's signature (the harnesses accept any such function)."""
    s = DistributedSampler(range(n), num_replicas=world_size, rank=rank, shuffle=shuffle, seed=seed,
                           drop_last=drop_last)
    s.set_epoch(epoch)
    return list(s)


def test_model_config_rejects_bad_sizes():
    with pytest.raises(ValueError, match=r"ModelConfig.width must be a positive int, got 0"):
        lab02.ModelConfig(width=0)
    with pytest.raises(ValueError, match=r"size must be 'lab', 'tiny' or 'tiny_bn', got 'huge'"):
        lab02.model_config("huge")


def test_labnet_has_buffer_frozen_and_unused_parameters():
    model = lab02.LabNet(lab02.model_config("tiny"))
    x, y = lab02.make_data(8, lab02.model_config("tiny"))
    torch.nn.functional.cross_entropy(model(x), y).backward()
    assert model.frozen.weight.grad is None and not model.frozen.weight.requires_grad
    assert model.aux.weight.grad is None, "aux is unused unless use_aux=True"
    assert model.head.weight.grad is not None
    assert [n for n, _ in model.named_buffers()] == ["scale"]
    bn = lab02.LabNet(lab02.model_config("tiny_bn"))
    assert {n for n, _ in bn.named_buffers()} >= {"body.1.running_mean", "body.1.running_var"}


def test_fingerprint_sees_one_ulp_and_permutations():
    t = torch.randn(100)
    base = lab02.fingerprint([t])
    bumped = t.clone()
    bumped[17] = torch.nextafter(bumped[17], torch.tensor(float("inf")))
    assert not torch.equal(lab02.fingerprint([bumped]), base)
    swapped = t.clone()
    swapped[[3, 4]] = swapped[[4, 3]]
    fp = lab02.fingerprint([swapped])
    assert fp[0] == base[0] or abs(fp[0] - base[0]) < 1e-9, "sum is order-insensitive up to rounding"
    assert fp[2] != base[2], "the position-weighted sum catches a swap"
    assert torch.equal(lab02.fingerprint([]), torch.zeros(3, dtype=torch.float64))


def test_state_comparisons_name_the_worst_tensor():
    a = {"w": torch.zeros(3), "b": torch.ones(2), "n": torch.tensor(3)}
    b = {"w": torch.tensor([0.0, 0.5, 0.0]), "b": torch.ones(2), "n": torch.tensor(4)}
    assert lab02.max_abs_diff(a, b) == 0.5
    assert lab02.worst_tensor(a, b).startswith("w: got [0.0, 0.0, 0.0]")
    assert lab02.max_abs_diff({"n": torch.tensor(1)}, {"n": torch.tensor(2)}) == 0.0


def test_measurements_with_torch_sampler():
    cov = lab02.epoch_coverage(torch_rank_indices, n=400, world=4, epochs=3)
    without = cov[~cov["set_epoch"]]["mean fraction of data seen per rank"]
    assert (without == 0.25).all(), cov
    assert cov[cov["set_epoch"]]["mean fraction of data seen per rank"].iloc[-1] > 0.5, cov
    correct = torch.tensor([False, False] + [True] * 28)  # the head (padding source) is wrong
    pad = lab02.padded_eval(torch_rank_indices, correct, worlds=[2, 4])
    assert pad["duplicates"].tolist() == [0, 2]
    assert pad.loc[1, "distributed accuracy"] == pytest.approx(28 / 32)
    assert pad.loc[1, "true accuracy"] == pytest.approx(28 / 30)


def test_assign_reference_bucketing_is_torchs_rule():
    # the tests of exercise 4 compare against this call; pin its semantics (walks tensors in the given order,
    # records tensor_indices, closes a bucket at >= limit, first limit then the cap)
    sizes = [40, 20480, 40, 20480, 4096, 131072]
    order = list(reversed(range(len(sizes))))
    tensors = [torch.empty(sizes[i] // 4) for i in order]
    got = dist._compute_bucket_assignment_by_size(tensors, [1000, 30000], [], order)[0]
    assert got == [[5], [4, 3, 2, 1], [0]]


def _count_all_reduces() -> list[int]:
    with lab02.record_collectives() as calls:
        t = torch.ones(3)
        dist.all_reduce(t)
        work = dist.all_reduce(t, async_op=True)
        work.wait()
    return [len(calls), int(calls[1]["async_op"]), int(t[0].item())]


def _swap_whole(t: torch.Tensor) -> torch.Tensor:
    """Not a ring: each of 2 ranks sends its whole tensor to the other (n elements each; a ring sends n too
    at world 2), then an all_gather the traffic reader must report."""
    other = 1 - dist.get_rank()
    got = torch.empty_like(t)
    if t.numel():
        req = dist.isend(t.clone(), other)
        dist.recv(got, other)
        req.wait()
        t.add_(got)
    if t.numel() == 3:
        dist.all_gather([torch.empty_like(t) for _ in range(2)], t)
    return t


def test_record_collectives_and_ring_traffic_from_the_trace(no_surviving_children):
    assert launch(_count_all_reduces, world_size=2, timeout=60) == [[2, 1, 4], [2, 1, 4]]
    res = launch(lab02.ring_check, world_size=2, args=(_swap_whole, [0, 3, 8]), timeout=60, trace=True)
    traffic = lab02.ring_traffic(res.trace, [0, 3, 8])
    assert [t["n"] for t in traffic] == [0, 3, 8]
    assert traffic[0] == {"n": 0, "ops": [], "sent_bytes": [0, 0]}
    assert traffic[1]["ops"] == ["all_gather", "isend", "recv"] and traffic[1]["sent_bytes"] == [12, 12]
    assert traffic[2]["ops"] == ["isend", "recv"] and traffic[2]["sent_bytes"] == [32, 32]
    assert lab02.ring_traffic_problem(traffic[2], world=2) is None
    assert "all_gather" in lab02.ring_traffic_problem(traffic[1], world=2)
    assert torch.equal(res[0][8], lab02.ring_input(8, 0) + lab02.ring_input(8, 1))


def test_torch_ddp_semantics_the_lab_matches(no_surviving_children):
    # exercise 4 promises: torch DDP accumulates every backward (13.0 with or without no_sync), BatchNorm
    # buffers are rank 0's at every forward; exercise 2: distributed == one process on the global batch
    calls = [(lab02.accumulation_toy, {}), (lab02.accumulation_toy, {"use_no_sync": True}),
             (lab02.train_torch_ddp, {"steps": 4, "unused": "all"}),
             (lab02.train_torch_ddp, {"steps": 1, "size": "tiny_bn", "unused": "none"})]
    res = launch(lab02.run_all, world_size=2, args=(calls,), timeout=60)
    assert [r[0] for r in res] == [13.0, 13.0] and [r[1] for r in res] == [13.0, 13.0]
    assert lab02.max_abs_diff(res[0][2], res[1][2]) == 0
    assert lab02.max_abs_diff(res[0][2], lab02.train_single(world=2, steps=4)) < 1e-5
    # after one step each rank's running stats come from its own batch: they differ (what the broadcast fixes)
    assert not torch.equal(res[0][3]["body.1.running_mean"], res[1][3]["body.1.running_mean"])


def test_kill_drill_times_from_the_kill(no_surviving_children):
    drill = lab02.kill_drill(kill_step=2, steps=50, timeout=60)
    assert drill["reported rank"] == 1 and "SIGKILL" in drill["outcome"], drill
    assert 0 <= drill["detect_s"] < drill["launch_to_report_s"], drill


def test_judge_ring_traffic_rule():
    ref = {"world": 3, "traffic": [{"n": 0, "ops": [], "sent_bytes": [0, 0, 0]},
                                   {"n": 5, "ops": ["isend", "recv"], "sent_bytes": [24, 24, 32]}]}
    judge.ring_traffic(ref, ref)
    whole = {"world": 3, "traffic": [ref["traffic"][0], {"n": 5, "ops": ["isend", "recv"],
                                                         "sent_bytes": [40, 40, 40]}]}
    with pytest.raises(AssertionError, match=r"bytes sent per rank \[40, 40, 40\] \(total 120\)"):
        judge.ring_traffic(whole, ref)
    gathered = {"world": 3, "traffic": [ref["traffic"][0], {"n": 5, "ops": ["all_gather"],
                                                            "sent_bytes": [0, 0, 0]}]}
    with pytest.raises(AssertionError, match=r"used \['all_gather'\]"):
        judge.ring_traffic(gathered, ref)


def test_judge_card_rule():
    measured = {"latency": 0.02, "cost": 0.5, "capacity": 429496729.0, "fallback": 0.03}
    good = {"card": dict(measured), "measured": measured, "justification_words": 40}
    judge.card(good, good)
    slow = {**good, "card": {**measured, "fallback": 0.3}}
    with pytest.raises(AssertionError, match=r"card fallback = 0.3, but this notebook measured 0.03"):
        judge.card(slow, good)
    wrong_cap = {**good, "measured": {**measured, "capacity": 1.0}, "card": {**measured, "capacity": 1.0}}
    with pytest.raises(AssertionError, match=r"expected 4.29497e\+08"):
        judge.card(wrong_cap, good)
    with pytest.raises(AssertionError, match=r"must be a finite number, got nan"):
        judge.card({**good, "card": {**measured, "latency": math.nan}}, good)


def test_a_violation_naming_no_rank_is_not_silence():
    """The contract test's "identical replicas pass silently" must tell a raise naming [] from a quiet return
    (issue 27: ``if diverged is not None`` raised on identical replicas and passed)."""

    def quiet(name, tensors):
        return None

    def raises_empty(name, tensors):
        raise lab02.ContractViolation(name, [])

    def raises_one(name, tensors):
        raise lab02.ContractViolation(name, [1])

    assert lab02.clean_check(quiet) == []
    assert lab02.clean_check(raises_empty) == ["raised ContractViolation naming no rank"]
    assert lab02.clean_check(raises_one) == [1]


def test_bug3_ending_accepts_a_hang_in_backward_or_a_collective_mismatch_only():
    """Bug 3 with a gathering checker hangs (rank 0 in backward); with an all_reduce checker gloo aborts on
    the size mismatch (measured: 'Received data size doesn't match expected size'). Both are right;
    finishing or any other ending is not."""
    for ending in ("hang in backward", "collective mismatch"):
        judge.bug3_ending(ending, "hang in backward")
    for wrong in ("finished", "LaunchTimeout, rank 0 not in backward: ...", None):
        with pytest.raises(AssertionError, match="bug 3 ended as"):
            judge.bug3_ending(wrong, "hang in backward")
