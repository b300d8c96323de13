"""Collective trace: the DataFrame, and first_divergence naming the rank and call site of a planted mismatch.

Run: .venv/bin/python -m pytest tests/test_course_dist_trace.py -x
"""

from __future__ import annotations

import sys

import cloudpickle
import pandas as pd
import pytest
import torch
import torch.distributed as dist

import course_dist
from course_dist import LaunchTimeout, RankError, first_divergence, launch

cloudpickle.register_pickle_by_value(sys.modules[__name__])


def many_collectives():
    me, world = course_dist.rank(), course_dist.world_size()
    t = torch.ones(3)
    dist.all_reduce(t)
    dist.broadcast(t, src=0)
    out = [torch.zeros(3) for _ in range(world)]
    dist.all_gather(out, t)
    work = dist.all_reduce(torch.ones(2, 2, dtype=torch.float64), async_op=True)
    work.wait()
    sub = dist.new_group([0, 1])
    if me in (0, 1):
        dist.all_reduce(t, group=sub)
    if me == 0:
        dist.send(t, dst=1)
    elif me == 1:
        dist.recv(t, src=0)
    dist.barrier()
    return me


@pytest.mark.usefixtures("no_surviving_children")
def test_trace_frame_of_a_correct_run():
    res = launch(many_collectives, 3, trace=True, timeout=60)
    df = res.trace
    assert list(df.columns[:9]) == [
        "rank",
        "seq",
        "op",
        "shape",
        "dtype",
        "group",
        "site",
        "t_start",
        "t_end",
    ]
    world = df[df.group == "WORLD"]
    for r in range(3):
        ops = world[world["rank"] == r].sort_values("seq")
        assert list(ops.op) == ["all_reduce", "broadcast", "all_gather", "all_reduce", "barrier"], ops
        assert list(ops.seq) == [0, 1, 2, 3, 4]
    row = world[(world["rank"] == 0) & (world.seq == 3)].iloc[0]
    assert row["shape"] == (2, 2) and row["dtype"] == "float64"
    assert row.t_end is not None and row.t_end >= row.t_start  # async: ended when waited on
    assert row.site.startswith(__file__ + ":"), row.site
    assert set(df[df.group == "ranks(0, 1)"]["rank"]) == {0, 1}
    assert set(df[df.group == "p2p"].op) == {"send", "recv"}
    assert df.t_end.notna().all()
    assert first_divergence(df) is None


def skip_on_rank_1():
    t = torch.ones(4)
    dist.all_reduce(t)
    if course_dist.rank() != 1:
        dist.all_reduce(t)  # rank 1 skips this one: planted bug
    dist.barrier()
    dist.all_reduce(t)
    return t.tolist()


@pytest.mark.usefixtures("no_surviving_children")
def test_first_divergence_names_the_rank_that_skipped():
    with pytest.raises((LaunchTimeout, RankError)) as ei:
        launch(skip_on_rank_1, 3, trace=True, timeout=4)
    div = first_divergence(ei.value.trace)
    assert div is not None, ei.value.trace
    assert (div.seq, div.group, div.reason, div.ranks) == (1, "WORLD", "op", [1]), str(div)
    assert div.calls[0]["op"] == "all_reduce" and div.calls[1]["op"] == "barrier"
    assert div.calls[0]["site"].startswith(__file__) and div.calls[1]["site"].startswith(__file__)
    assert "rank 1 looks like it skipped all_reduce #1" in str(div), str(div)


def _row(rank, seq, op="all_reduce", shape=(4,), site="cell.py:3"):
    return dict(
        rank=rank,
        seq=seq,
        op=op,
        shape=shape,
        dtype="float32",
        group="WORLD",
        group_ranks=None,
        site=site,
        t_start=float(seq),
        t_end=None,
    )


def test_first_divergence_shape_and_missing_rank():
    df = pd.DataFrame(
        [_row(0, 0), _row(1, 0), _row(2, 0, shape=(5,), site="cell.py:9"), _row(0, 1), _row(2, 1)]
    )
    df.attrs["world_size"] = 3
    div = first_divergence(df)
    assert (div.seq, div.reason, div.ranks) == (0, "shape", [2]), str(div)
    assert "rank 2 called all_reduce(shape=[5], float32) at cell.py:9" in str(div)
    df = pd.DataFrame([_row(0, 0), _row(1, 0), _row(2, 0), _row(0, 1), _row(2, 1)])
    df.attrs["world_size"] = 3
    div = first_divergence(df)
    assert (div.seq, div.reason, div.ranks) == (1, "missing", [1]) and "rank 1 never called it" in str(div)
    df = pd.DataFrame([_row(0, 0), _row(1, 0)])
    assert first_divergence(df, world_size=3).ranks == [2]  # a rank with no records at all


def test_first_divergence_needs_a_dataframe():
    with pytest.raises(TypeError, match="expects the trace DataFrame"):
        first_divergence([{"rank": 0}])


def debug_level():
    return str(dist.get_debug_level()), dist.get_rank()


@pytest.mark.usefixtures("no_surviving_children")
def test_debug_detail_reaches_preloaded_ranks():
    res = launch(debug_level, 2, debug="DETAIL", timeout=60)
    assert all(lvl.endswith(".DETAIL") for lvl, _ in res), list(res)
    res = launch(debug_level, 2, env={"TORCH_DISTRIBUTED_DEBUG": "INFO"}, timeout=60)  # env reaches it too
    assert all(lvl.endswith(".INFO") for lvl, _ in res), list(res)


def _join_uneven() -> int:
    from torch.distributed.algorithms.join import Join
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(4, 1))
    steps = 3 + course_dist.rank()
    with Join([model]):  # torch's C++ reducer needs the real Work objects of its async collectives
        for _ in range(steps):
            model(torch.ones(2, 4)).sum().backward()
    return steps


def test_tracing_keeps_torch_internals_working_join_with_ddp() -> None:
    res = course_dist.launch(_join_uneven, 2, timeout=60, trace=True)
    assert list(res) == [3, 4]
    assert len(res.trace) > 0 and "all_reduce" in set(res.trace["op"])


def _pipelined() -> list[float]:
    from torch.distributed.pipelining import PipelineStage, ScheduleGPipe

    torch.manual_seed(0)
    r = course_dist.rank()
    stage = PipelineStage(torch.nn.Linear(4, 4), r, 2, torch.device("cpu"))
    sched = ScheduleGPipe(stage, n_microbatches=2, loss_fn=lambda o, t: ((o - t) ** 2).mean())
    if r == 0:
        sched.step(torch.ones(4, 4))
    else:
        sched.step(target=torch.zeros(4, 4), losses=[])
    buf = torch.empty(2)  # P2POp checks its op's identity against c10d's own isend/irecv
    ops = [dist.P2POp(dist.isend, torch.ones(2) * r, 1 - r), dist.P2POp(dist.irecv, buf, 1 - r)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    return buf.tolist()


def test_tracing_keeps_p2pop_and_pipelining_working() -> None:
    res = course_dist.launch(_pipelined, 2, timeout=60, trace=True)
    assert list(res) == [[1.0, 1.0], [0.0, 0.0]]
    assert {"isend", "irecv"} <= set(res.trace["op"])


def test_divergence_survives_a_pickled_trace() -> None:
    """A barrier's dtype is NaN; a pickled copy of the frame holds several NaN objects (NaN != NaN), which
    once made every rank look odd: the culprit must stay the one rank that called something else."""
    import pickle

    import pandas as pd

    from course_dist.trace import first_divergence

    common = dict(seq=0, group="default", t_start=0.0, t_end=0.0, group_ranks=None)
    rows = [dict(rank=r, op="barrier", shape=None, dtype=float("nan"), site=f"x.py:{r}", called="barrier",
                 **common) for r in (0, 2)]
    rows.append(dict(rank=1, op="all_reduce", shape=(1,), dtype="float32", site="x.py:9", called="all_reduce",
                     **common))
    df = pickle.loads(pickle.dumps(pd.DataFrame(rows)))
    div = first_divergence(df, world_size=3)
    assert div is not None and div.ranks == [1], f"culprit: got {div and div.ranks}, expected [1]"
