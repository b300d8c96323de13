"""StepTimer, gather_frames, the timeline and scaling plots, seed_all, pick/fast_mode.

Run: .venv/bin/python -m pytest tests/test_course_dist_timing.py -x
"""

from __future__ import annotations

import random
import sys
import time

import cloudpickle
import matplotlib
import numpy as np
import pandas as pd
import pytest
import torch
import torch.distributed as dist

matplotlib.use("Agg")

import course_dist  # noqa: E402
from course_dist import StepTimer, gather_frames, launch, pick, plot_scaling, plot_timeline, seed_all  # noqa: E402

cloudpickle.register_pickle_by_value(sys.modules[__name__])


def timed_steps(steps):
    timer = StepTimer()
    t = torch.ones(8)
    for _ in range(steps):
        with timer.compute():
            time.sleep(0.01)
        with timer.comm():
            dist.all_reduce(t)
        timer.end_step()
    return gather_frames(timer.frame()), timer.summary()


@pytest.mark.usefixtures("no_surviving_children")
def test_step_timer_gathered_on_every_rank():
    res = launch(timed_steps, 2, args=(3,), timeout=60)
    frames = [f for f, _ in res]
    pd.testing.assert_frame_equal(frames[0], frames[1])
    df = frames[0]
    assert list(df.columns) == ["rank", "step", "kind", "start", "end", "seconds"]
    assert len(df) == 2 * 3 * 2 and set(df["rank"]) == {0, 1} and set(df["kind"]) == {"compute", "comm"}
    assert (df["end"] >= df["start"]).all() and (df.loc[df.kind == "compute", "seconds"] >= 0.01).all()
    summary = res[1][1]
    assert list(summary.columns) == ["rank", "step", "compute", "comm", "other", "total"]
    assert list(summary.step) == [0, 1, 2] and (summary.total >= summary.compute + summary.comm - 1e-9).all()


def test_gather_frames_outside_a_group_is_identity():
    df = pd.DataFrame({"rank": [0], "x": [1]})
    pd.testing.assert_frame_equal(gather_frames(df), df)


def test_plot_timeline_draws_one_row_per_rank():
    df = pd.DataFrame(
        {
            "rank": [0, 0, 1, 1],
            "step": [0] * 4,
            "kind": ["compute", "comm"] * 2,
            "start": [10.0, 10.5, 10.0, 10.2],
            "end": [10.5, 10.6, 10.2, 10.6],
        }
    )
    ax = plot_timeline(df)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["rank 0", "rank 1"]
    assert len(ax.collections) == 4  # one bar collection per (kind, rank)
    starts = [p.get_extents().x0 for c in ax.collections for p in c.get_paths()]
    assert min(starts) == pytest.approx(0.0) and max(starts) == pytest.approx(
        0.5
    )  # shifted to the first span
    with pytest.raises(ValueError, match=r"missing \['end'\]"):
        plot_timeline(df.drop(columns="end"))


def test_plot_scaling_with_ideal_line():
    df = pd.DataFrame({"world_size": [1, 2, 4], "throughput": [100.0, 150.0, 180.0]})
    ax = plot_scaling(df)
    measured, ideal = ax.get_lines()
    assert list(ideal.get_ydata()) == [100.0, 200.0, 400.0]
    assert list(measured.get_ydata()) == [100.0, 150.0, 180.0]
    with pytest.raises(ValueError, match="column 'samples' not in the DataFrame"):
        plot_scaling(df, y="samples")


def draws():
    return random.random(), float(np.random.rand()), float(torch.rand(1))


def test_seed_all_is_reproducible_and_rank_dependent():
    assert seed_all(7) == 7
    a = draws()
    seed_all(7)
    assert draws() == a
    assert seed_all(7, rank=1) == 8 and draws() != a
    with pytest.raises(ValueError, match="seed must be an int >= 0, got -1"):
        seed_all(-1)
    with pytest.raises(ValueError, match="rank must be an int >= 0, got 'x'"):
        seed_all(1, rank="x")


def test_pick_and_fast_mode(monkeypatch):
    monkeypatch.setenv("COURSE_FAST", "1")
    assert course_dist.fast_mode() and pick(full=100, fast=3) == 3
    monkeypatch.setenv("COURSE_FAST", "0")
    assert not course_dist.fast_mode() and pick(full=100, fast=3) == 100
    monkeypatch.delenv("COURSE_FAST")
    assert pick(full=100, fast=3) == 100


def test_rank_helpers_outside_a_launch():
    assert (course_dist.rank(), course_dist.world_size(), str(course_dist.device())) == (0, 1, "cpu")
