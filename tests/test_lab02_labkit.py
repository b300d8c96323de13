"""Fast unit tests of lab 02's machinery (course_dist/labkit/lab02.py) - never of the exercises' answers.

    .venv/bin/python -m pytest tests/test_lab02_labkit.py -q
"""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
from torch.utils.data import DistributedSampler

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
    with pytest.raises(ValueError, match=r"size must be 'lab' or 'tiny', got 'huge'"):
        lab02.model_config("huge")


def test_labnet_has_buffer_frozen_and_unused_parameters():
    model = lab02.LabNet(lab02.model_config("tiny"))
    x, y = lab02.make_data(8, lab02.model_config("tiny"))
    torch.nn.functional.cross_entropy(model(x), y).backward()
    assert model.frozen.weight.grad is None and not model.frozen.weight.requires_grad
    assert model.aux.weight.grad is None, "aux is unused unless use_aux=True"
    assert model.head.weight.grad is not None
    assert [n for n, _ in model.named_buffers()] == ["scale"]


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
    # the tests of exercise 5 compare against this call; pin its semantics (walks tensors in the given order,
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


def test_record_collectives_counts_calls_in_a_rank():
    assert launch(_count_all_reduces, world_size=2, timeout=60) == [[2, 1, 4], [2, 1, 4]]


def test_torch_ddp_matches_one_process_within_documented_tolerance():
    # the notebook's exercise 3 promises: distributed training == one process on the global batch (< 1e-5)
    ddp = launch(lab02.train_torch_ddp, world_size=2, kwargs={"steps": 4, "unused": "all"}, timeout=60)
    single = lab02.train_single(world=2, steps=4)
    assert lab02.max_abs_diff(ddp[0], ddp[1]) == 0
    assert lab02.max_abs_diff(ddp[0], single) < 1e-5
