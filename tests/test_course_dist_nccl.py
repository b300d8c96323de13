"""NCCL: one GPU per rank, collectives on cuda tensors, and a rank failure torn down (skipped without 2 GPUs).

Run on a GPU node: .venv/bin/python -m pytest tests/test_course_dist_nccl.py -x
"""

from __future__ import annotations

import sys

import cloudpickle
import pytest
import torch
import torch.distributed as dist

import course_dist
from course_dist import RankError, launch

cloudpickle.register_pickle_by_value(sys.modules[__name__])
pytestmark = [
    pytest.mark.nccl,
    pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 CUDA GPUs"),
    pytest.mark.usefixtures("no_surviving_children"),
]


def on_gpu():
    dev = course_dist.device()
    t = torch.ones(4, device=dev) * (course_dist.rank() + 1)
    dist.all_reduce(t)
    return str(dev), dist.get_backend(), t.cpu().tolist()


def test_auto_picks_nccl_with_one_gpu_per_rank():
    res = launch(on_gpu, 2, timeout=120)
    assert list(res) == [(f"cuda:{r}", "nccl", [3.0] * 4) for r in range(2)]
    assert res.backend == "nccl"


def raise_on_gpu():
    t = torch.ones(4, device=course_dist.device())
    if course_dist.rank() == 1:
        raise RuntimeError("planted on rank 1")
    dist.all_reduce(t)


def test_nccl_rank_error_names_the_rank():
    with pytest.raises(RankError, match="rank 1 raised RuntimeError: planted on rank 1"):
        launch(raise_on_gpu, 2, backend="nccl", timeout=60)
