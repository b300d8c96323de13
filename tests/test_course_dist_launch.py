"""course_dist.launch: results by rank, streams, environment, start methods, and argument checking.

Run: .venv/bin/python -m pytest tests/test_course_dist_launch.py -x
"""

from __future__ import annotations

import os
import sys
import threading

import cloudpickle
import pytest
import torch
import torch.distributed as dist

import course_dist
from course_dist import RankError, launch

# Functions below travel by value, as a notebook cell's would (not re-imported from this file in each rank).
cloudpickle.register_pickle_by_value(sys.modules[__name__])
pytestmark = pytest.mark.usefixtures("no_surviving_children")


def sum_of_ranks(offset: float = 0.0, *, scale: float = 1.0):
    t = torch.tensor([float(course_dist.rank())])
    dist.all_reduce(t)
    return course_dist.rank(), course_dist.world_size(), dist.get_rank(), (t.item() + offset) * scale


@pytest.mark.parametrize("world", [1, 2, 3, 4])
def test_results_in_rank_order_for_each_world_size(world):
    res = launch(sum_of_ranks, world, timeout=60)
    total = world * (world - 1) / 2
    assert list(res) == [(r, world, r, total) for r in range(world)], list(res)
    assert res.elapsed > 0 and res.start_method == "forkserver"


def test_args_and_kwargs_reach_every_rank():
    res = launch(sum_of_ranks, 2, args=(10.0,), kwargs={"scale": 2.0}, timeout=60)
    assert [v[3] for v in res] == [22.0, 22.0], list(res)


def chatty():
    print(f"hello from {course_dist.rank()}")
    print("to stderr", file=sys.stderr)
    os.write(1, b"raw fd write\n")  # C-level output (gloo, CUDA) is captured too
    return None


def test_streams_prefixed_in_parent_and_kept_on_result(capsys):
    res = launch(chatty, 2, timeout=60)
    out, err = capsys.readouterr()
    for r in range(2):
        assert f"[rank {r}] hello from {r}" in out, out
        assert f"[rank {r}] to stderr" in err, err
        assert f"hello from {r}\n" in res.stdout[r] and "raw fd write" in res.stdout[r], res.stdout
        assert "to stderr" in res.stderr[r]
    res = launch(chatty, 2, timeout=60, stream=False)
    out, _ = capsys.readouterr()
    assert "[rank" not in out and "hello from 1" in res.stdout[1]


def read_env(name):
    return os.environ.get(name), os.environ.get("OMP_NUM_THREADS"), torch.get_num_threads(), os.getcwd()


def test_env_changes_after_server_start_reach_ranks(monkeypatch, tmp_path):
    launch(sum_of_ranks, 1, timeout=60)  # the forkserver is surely running now
    monkeypatch.setenv("COURSE_TEST_VAR", "late value")
    monkeypatch.chdir(tmp_path)
    res = launch(read_env, 2, args=("COURSE_TEST_VAR",), timeout=60)
    assert res[1] == ("late value", "1", 1, str(tmp_path)), res[1]
    res = launch(read_env, 2, args=("EXTRA",), env={"EXTRA": "x"}, threads_per_rank=2, timeout=60)
    assert res[0] == ("x", "2", 2, str(tmp_path)), res[0]


def where():
    return str(course_dist.device()), dist.get_backend()


@pytest.mark.skipif(torch.cuda.device_count() >= 2, reason="auto picks NCCL with GPUs")
def test_auto_backend_is_gloo_on_cpu():
    res = launch(where, 2, timeout=60)
    assert list(res) == [("cpu", "gloo")] * 2 and res.backend == "gloo"


def test_importable_function_travels_by_reference():
    from course_dist.examples import allreduce_ranks

    assert launch(allreduce_ranks, 3, timeout=60) == [3.0, 3.0, 3.0]


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_other_start_methods(method):
    res = launch(sum_of_ranks, 2, start_method=method, timeout=120)
    assert [v[3] for v in res] == [1.0, 1.0] and res.start_method == method


def unpicklable_result():
    return threading.Lock()


def test_unpicklable_return_value_is_a_rank_error():
    with pytest.raises(RankError, match="cannot be pickled back to the launcher") as ei:
        launch(unpicklable_result, 2, timeout=60)
    assert ei.value.exc_type == "TypeError"


@pytest.mark.parametrize("world", [0, -1, 1.5, True, "2"])
def test_bad_world_size(world):
    with pytest.raises(ValueError, match=rf"world_size must be an int >= 1, got {world!r}"):
        launch(sum_of_ranks, world)


def test_not_callable():
    with pytest.raises(TypeError, match="fn must be callable, got int 3"):
        launch(3, 2)


@pytest.mark.parametrize("method", [None, "fork", "spawn"])
def test_unpicklable_argument_named_before_anything_starts(method):
    with pytest.raises(TypeError, match=r"args\[1\] \(lock\) cannot be pickled"):
        launch(sum_of_ranks, 2, args=(1.0, threading.Lock()), start_method=method)
    with pytest.raises(TypeError, match=r"kwargs\['scale'\] \(lock\) cannot be pickled"):
        launch(sum_of_ranks, 2, kwargs={"scale": threading.Lock()}, start_method=method)


@pytest.mark.skipif(torch.cuda.device_count() >= 2, reason="has GPUs")
def test_nccl_without_gpus():
    with pytest.raises(
        ValueError, match=r"backend='nccl' needs one CUDA GPU per rank: world_size=2 but 0 GPU"
    ):
        launch(sum_of_ranks, 2, backend="nccl")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"backend": "mpi"}, "backend must be 'auto', 'gloo' or 'nccl', got 'mpi'"),
        ({"timeout": 0}, "timeout must be a positive number of seconds, got 0"),
        ({"timeout": None}, "timeout must be a positive number of seconds, got None"),
        ({"threads_per_rank": 0}, "threads_per_rank must be an int >= 1, got 0"),
        (
            {"start_method": "thread"},
            "start_method must be None, 'forkserver', 'fork' or 'spawn', got 'thread'",
        ),
        ({"debug": "LOUD"}, "debug must be None, 'OFF', 'INFO' or 'DETAIL', got 'LOUD'"),
        ({"faults": "explode:1@2"}, "bad fault 'explode:1@2'"),
    ],
)
def test_bad_options(kwargs, match):
    with pytest.raises(ValueError, match=match):
        launch(sum_of_ranks, 2, **kwargs)


def with_dataloader():
    import multiprocessing

    data = torch.utils.data.TensorDataset(torch.arange(16.0))
    loader = torch.utils.data.DataLoader(data, batch_size=4, num_workers=2)
    total = torch.zeros(1)
    for (batch,) in loader:
        total += batch.sum()
    dist.all_reduce(total)
    return total.item(), multiprocessing.get_start_method()


def test_dataloader_workers_inside_ranks():
    # ranks are not daemonic (they may have children) and get the platform's default start method
    res = launch(with_dataloader, 2, timeout=120)
    assert [v[0] for v in res] == [240.0, 240.0], list(res)
    assert res[0][1] == ("fork" if sys.platform == "linux" else res[0][1])


def test_course_dist_launch_is_callable_whatever_was_imported_first() -> None:
    """``from course_dist.launch import ...`` (a labkit does it) sets ``course_dist.launch`` to the submodule;
    a notebook's ``course_dist.launch(fn)`` must still launch."""
    import subprocess
    import sys

    code = (
        "import course_dist.launch\n"
        "import course_dist\n"
        "print(list(course_dist.launch(lambda: 7, world_size=1, timeout=60)))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip().endswith("[7]"), (r.returncode, r.stdout, r.stderr[-800:])
