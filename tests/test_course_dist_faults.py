"""Fault plans: parsing, and each kind (kill, raise, hang, slow) applied by course_dist.step on its rank.

Run: .venv/bin/python -m pytest tests/test_course_dist_faults.py -x
"""

from __future__ import annotations

import sys

import cloudpickle
import pytest
import torch
import torch.distributed as dist

import course_dist
from course_dist import Fault, FaultInjected, LaunchTimeout, RankError, StepTimer, launch
from course_dist.faults import format_faults, parse_faults

cloudpickle.register_pickle_by_value(sys.modules[__name__])


def test_parse_and_format_round_trip():
    plan = parse_faults("kill:1@5, slow:0@0:0.05,raise:2@3#1,hang:0@7#*")
    assert plan == [
        Fault("kill", 1, 5),
        Fault("slow", 0, 0, seconds=0.05),
        Fault("raise", 2, 3, attempt=1),
        Fault("hang", 0, 7, attempt=None),
    ]
    assert parse_faults(format_faults(plan)) == plan
    assert parse_faults("") == [] and parse_faults(None) == []


@pytest.mark.parametrize("text", ["boom:1@2", "kill:x@2", "kill:1", "slow:0@1", "kill:1@2#z", "kill:-1@2"])
def test_bad_fault_strings_are_named(text):
    with pytest.raises(ValueError, match=rf"bad fault {text!r}"):
        parse_faults(text)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(kind="melt", rank=0, step=0), "Fault kind must be one of .*, got 'melt'"),
        (dict(kind="kill", rank=-1, step=0), "Fault rank must be an int >= 0, got -1"),
        (dict(kind="kill", rank=0, step=1.5), "Fault step must be an int >= 0, got 1.5"),
        (dict(kind="slow", rank=0, step=0), r"Fault\('slow'\) needs seconds >= 0, got None"),
    ],
)
def test_bad_fault_objects(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Fault(**kwargs)


def test_faults_must_be_faults():
    with pytest.raises(TypeError, match="faults must be a list of Fault"):
        format_faults([("kill", 1, 2)])


def test_step_in_this_process(monkeypatch):
    monkeypatch.delenv("COURSE_FAULTS", raising=False)
    course_dist.step(0)  # no plan: nothing happens
    monkeypatch.setenv("COURSE_FAULTS", "raise:0@2")
    course_dist.step(1)
    with pytest.raises(FaultInjected, match="rank 0 raised at step 2"):
        course_dist.step(2)
    monkeypatch.setenv("TORCHELASTIC_RESTART_COUNT", "1")
    course_dist.step(2)  # attempt 0 only: a restarted job gets past it


def train(steps):
    timer = StepTimer()
    t = torch.ones(4)
    for i in range(steps):
        with timer.compute():
            course_dist.step(i)
        with timer.comm():
            dist.all_reduce(t)
        timer.end_step()
    return timer.summary()


@pytest.mark.usefixtures("no_surviving_children")
def test_kill_fault():
    with pytest.raises(RankError, match="rank 1 died: killed by SIGKILL") as ei:
        launch(train, 2, args=(5,), faults=[Fault("kill", rank=1, step=2)], timeout=60)
    assert ei.value.signal_name == "SIGKILL"
    assert "fault: SIGKILL rank 1 at step 2" in ei.value.stderr[1]


@pytest.mark.usefixtures("no_surviving_children")
def test_raise_fault_from_a_string_plan():
    with pytest.raises(
        RankError, match=r"rank 2 raised FaultInjected: injected fault: rank 2 raised at step 3"
    ):
        launch(train, 3, args=(5,), faults="raise:2@3", timeout=60)


@pytest.mark.usefixtures("no_surviving_children")
def test_hang_fault_shows_in_the_stack():
    with pytest.raises(LaunchTimeout) as ei:
        launch(train, 2, args=(5,), faults=[Fault("hang", rank=0, step=1)], timeout=3)
    err = ei.value
    assert "faults.py" in err.stacks[0] and "in step" in err.stacks[0] and "in train" in err.stacks[0]
    assert err.last_collective[0]["seq"] == 0 and err.last_collective[0]["done"]
    assert err.last_collective[1]["seq"] == 1 and not err.last_collective[1]["done"]


@pytest.mark.usefixtures("no_surviving_children")
def test_slow_fault_makes_a_straggler_and_others_wait():
    res = launch(train, 2, args=(4,), faults=[Fault("slow", rank=0, step=1, seconds=0.25)], timeout=60)
    slow, fast = res[0], res[1]
    # three slowed steps of >= 0.25 s each on rank 0 (a lower bound that sleep guarantees)
    assert slow.loc[slow.step >= 1, "compute"].min() >= 0.25, slow
    assert slow.loc[slow.step == 0, "compute"].iloc[0] < 0.25, slow
    # rank 1 waits in all_reduce for the straggler: its comm time carries rank 0's delay (generous bound)
    assert fast["comm"].sum() >= 0.5, fast


@pytest.mark.usefixtures("no_surviving_children")
def test_attempt_gates_the_fault():
    plan = [Fault("kill", rank=1, step=1)]  # attempt 0 only
    res = launch(train, 2, args=(3,), faults=plan, env={"TORCHELASTIC_RESTART_COUNT": "1"}, timeout=60)
    assert len(res) == 2
    with pytest.raises(RankError, match="rank 1 raised FaultInjected"):
        launch(
            train,
            2,
            args=(3,),
            faults=[Fault("raise", 1, 1, attempt=None)],
            env={"TORCHELASTIC_RESTART_COUNT": "1"},
            timeout=60,
        )


def test_fault_plan_is_deterministic():
    assert parse_faults("slow:1@2:0.5,kill:0@9") == parse_faults("slow:1@2:0.5,kill:0@9")
    assert format_faults(Fault("slow", 1, 2, seconds=0.5)) == "slow:1@2:0.5"
