"""Fast unit tests of lab 04's machinery (course_dist/labkit/lab04/) and its judge rules - never of the
exercises' answers.

    .venv/bin/python -m pytest tests/test_lab04_labkit.py -q

The writers and samplers below are deliberately naive (wrong) ones: the drills must catch them.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from autograder.judges import lab04 as judge
from course_dist.labkit import lab04

pytestmark = pytest.mark.usefixtures("no_surviving_children")  # forked writers, subprocesses


def test_old_module_names_are_gone_and_the_package_imports_alone():
    code = ("import course_dist.labkit.lab04 as m, importlib.util as u; "
            "assert m.__file__.endswith('lab04/__init__.py'), m.__file__; "
            "assert all(u.find_spec('course_dist.labkit.' + n) is None for n in "
            "('lab04_crash', 'lab04_drills', 'lab04_elastic', 'lab04_sim', 'lab04_dcp'))")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_config_validates_and_hashes():
    with pytest.raises(ValueError, match=r"must be > 0, got 0, 12, 24"):
        lab04.Config(n_samples=0)
    a, b = lab04.Config(), lab04.Config(lr=1e-3)
    assert a.digest() == lab04.Config().digest() and a.digest() != b.digest() and len(a.digest()) == 16


def test_fixed_batches_refuses_what_it_cannot_split():
    with pytest.raises(ValueError, match=r"batch_size % world_size == 0.*world_size=3"):
        lab04.fixed_batches(100, 3, 0, seed=0, epoch=0, consumed=0, batch_size=10)
    parts = [lab04.fixed_batches(96, 2, r, seed=0, epoch=1, consumed=24, batch_size=12) for r in range(2)]
    flat = sorted(i for p in parts for b in p for i in b)
    assert flat == sorted(lab04.epoch_order(96, 0, 1)[24:])


def test_trainer_is_deterministic_and_uses_every_rng():
    torch.set_num_threads(1)
    cfg = lab04.Config()
    a, b = lab04.train(cfg, 3), lab04.train(cfg, 3)
    assert a.losses == b.losses and torch.equal(a.params, b.params)
    tr = lab04.Trainer(cfg)
    tr.train_step()
    import numpy as np

    py, npy, th = random.getstate(), np.random.get_state()[1].copy(), torch.get_rng_state()
    tr.train_step()
    assert random.getstate() != py, "the step must draw from python's RNG"
    assert not (np.random.get_state()[1] == npy).all(), "the step must draw from numpy's RNG"
    assert not torch.equal(torch.get_rng_state(), th), "the step must draw from torch's RNG (dropout)"


def test_check_resume_catches_a_weights_only_checkpoint():
    def capture(tr):
        return {"model": tr.model.state_dict()}

    def restore(tr, s):
        tr.model.load_state_dict(s["model"])

    rep = lab04.check_resume(capture, restore, lab04.Config(), k=3, m=3)
    assert not rep.ok and rep.first_bad_step == 4, rep
    with pytest.raises(ValueError, match=r"k=-1, m=3"):
        lab04.check_resume(capture, restore, lab04.Config(), k=-1, m=3)


def test_restore_twice_catches_a_restore_that_aliases_the_state():
    """The optimizer keeps the tensors it is handed: a restore without a copy lets AdamW rewrite the state."""
    import copy

    def capture(tr):
        return copy.deepcopy({"model": tr.model.state_dict(), "opt": tr.optimizer.state_dict(),
                              "sched": tr.scheduler.state_dict(), "pos": (tr.step, tr.epoch, tr.consumed)})

    def restore(tr, s):  # RNG deliberately not part of it: the stateless config re-seeds per step
        tr.model.load_state_dict(s["model"])
        tr.optimizer.load_state_dict(s["opt"])
        tr.scheduler.load_state_dict(s["sched"])
        tr.step, tr.epoch, tr.consumed = s["pos"]

    cfg = lab04.Config(stateless_rng=True)
    rep = lab04.check_restore_twice(capture, restore, cfg, k=3, m=3)
    assert rep.first.ok and not rep.state_unchanged and not rep.ok, rep.detail
    assert "must not keep references" in rep.detail

    def restore_copy(tr, s):
        restore(tr, copy.deepcopy(s))

    ok = lab04.check_restore_twice(capture, restore_copy, cfg, k=3, m=3)
    assert ok.ok, ok.detail


def _naive_save(root, step, parts, *, keep=3):
    """Wrong on purpose: writes straight into the final directory with torch.save(obj, path), no fsync."""
    d = os.path.join(root, f"step-{step:08d}")
    os.makedirs(d, exist_ok=True)
    files = {}
    for name, obj in parts.items():
        torch.save(obj, os.path.join(d, f"{name}.pt"))
        data = open(os.path.join(d, f"{name}.pt"), "rb").read()
        files[f"{name}.pt"] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    with open(os.path.join(d, "manifest.json"), "w") as f:
        json.dump({"step": step, "files": files}, f)
    return d


def test_protocol_and_oracle_catch_a_naive_writer(tmp_path):
    res = lab04.run_in_child(lambda: _naive_save(tmp_path, 2, lab04.demo_parts(2)), tmp_path)
    assert res.exitcode == 0, res.error
    problems = lab04.protocol_problems(res.records, 2)
    assert any("no rename publishes step-00000002" in p for p in problems), problems
    assert any("opened for writing inside a published step directory" in p for p in problems), problems
    d = tmp_path / "step-00000002"
    assert lab04.verify_dir(d) is None
    data = bytearray((d / "model.pt").read_bytes())
    data[100] ^= 1
    (d / "model.pt").write_bytes(bytes(data))
    assert "sha256" in lab04.verify_dir(d)


def _torch_path_save(root, step, parts):
    """Wrong on purpose: temp dir, rename, dir fsyncs, but parts via torch.save(obj, path): C++, unsynced."""
    root = Path(root)
    tmp, final = root / f".tmp-step-{step:08d}", root / f"step-{step:08d}"
    tmp.mkdir()
    for name, obj in parts.items():
        torch.save(obj, str(tmp / f"{name}.pt"))
    with open(tmp / "manifest.json", "w") as f:
        f.write("{}")
        f.flush()
        os.fsync(f.fileno())
    fd = os.open(tmp, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
    os.replace(tmp, final)
    fd = os.open(root, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)


def test_rename_records_what_it_publishes_and_the_protocol_flags_unsynced_cpp_writes(tmp_path):
    res = lab04.run_in_child(lambda: _torch_path_save(tmp_path, 2, lab04.demo_parts(2)), tmp_path)
    assert res.exitcode == 0, res.error
    pub = [r for r in res.records if r["op"] == "rename"]
    assert pub and sorted(pub[0]["contents"]) == ["manifest.json", "meta.pt", "model.pt", "optimizer.pt"], pub
    assert not any(r["path"].endswith("model.pt") for r in res.records if r["op"] != "rename"), (
        "torch.save(obj, path) should be invisible to the Python wrappers")
    problems = lab04.protocol_problems(res.records, 2)
    flagged = [p for p in problems if "torch's C++ writer" in p]
    assert len(flagged) == 3, problems


def test_power_loss_drops_unsynced_data_and_names(tmp_path):
    base, root = tmp_path / "base", tmp_path / "root"
    base.mkdir()
    (base / "old.txt").write_text("durable")
    root.mkdir()
    (root / "old.txt").write_text("durable")

    def writer():
        with open(root / "synced.bin", "wb") as f:
            f.write(b"a" * 100)
            f.flush()
            os.fsync(f.fileno())
        with open(root / "unsynced.bin", "wb") as f:
            f.write(b"b" * 100)
        fd = os.open(root, os.O_RDONLY)
        os.fsync(fd)  # both names durable; only one file's data
        os.close(fd)
        with open(root / "late.bin", "wb") as f:  # data fsynced, name never (no directory fsync after)
            f.write(b"c" * 10)
            f.flush()
            os.fsync(f.fileno())

    res = lab04.run_in_child(writer, root)
    assert res.exitcode == 0, res.error
    lost = lab04.power_loss(root, base, res.records)
    assert (root / "synced.bin").read_bytes() == b"a" * 100
    assert (root / "unsynced.bin").read_bytes() == b"", "unsynced data must be dropped"
    assert not (root / "late.bin").exists(), "a name whose directory was never fsynced after it must vanish"
    assert (root / "old.txt").read_text() == "durable"
    assert any("unsynced.bin" in x for x in lost) and any("late.bin" in x for x in lost), lost


def test_power_loss_undoes_an_unsynced_rename_and_a_kill_point(tmp_path):
    base, root = tmp_path / "base", tmp_path / "root"
    for d in (base, root):
        (d / "latest").parent.mkdir(exist_ok=True)
        (d / "latest").write_text("step-1")

    def writer():
        with open(root / ".latest.tmp", "w") as f:
            f.write("step-2")
            f.flush()
            os.fsync(f.fileno())
        os.replace(root / ".latest.tmp", root / "latest")  # no fsync of the root afterwards

    res = lab04.run_in_child(writer, root)
    lab04.power_loss(root, base, res.records)
    assert (root / "latest").read_text() == "step-1", "an unsynced rename over latest must revert"
    res = lab04.run_in_child(writer, root, kill_at=2)  # killed before the write: an empty temp file at most
    assert res.signal == signal.SIGKILL
    lab04.power_loss(root, base, res.records, executed=2)
    assert not (root / ".latest.tmp").exists() and (root / "latest").read_text() == "step-1"


def test_run_in_child_kills_before_the_requested_op_and_tears_writes(tmp_path):
    def writer():
        with open(tmp_path / "a.bin", "wb") as f:
            f.write(b"x" * 1000)

    res = lab04.run_in_child(writer, tmp_path, kill_at=2)  # op 1 = open, op 2 = write (cut in half)
    assert res.signal == signal.SIGKILL and [r["op"] for r in res.records] == ["open", "write"]
    assert res.records[0]["created"] is True
    assert (tmp_path / "a.bin").stat().st_size == 500


def test_distributed_rank_problems_flag_shared_writes_off_rank_0_and_unsynced_files():
    from course_dist.labkit.lab04.distributed import _rank_problems

    recs = [
        {"n": 1, "op": "open", "path": ".tmp-step-00000001/shared-model.pt", "src": None, "rank": 1},
        {"n": 1, "op": "open", "path": ".tmp-step-00000001/rank00-a.pt", "src": None, "rank": 0},
        {"n": 2, "op": "fsync", "path": ".tmp-step-00000001/rank00-a.pt", "src": None, "rank": 0},
        {"n": 3, "op": "rename", "path": "step-00000001", "src": ".tmp-step-00000001", "rank": 0,
         "contents": ["rank00-a.pt", "rank01-a.pt"]},
    ]
    problems = _rank_problems(recs, Path("step-00000001"))
    assert any("ranks other than 0 opened shared files" in p for p in problems), problems
    assert any("rank01-a.pt was never fsynced" in p for p in problems), problems
    assert not any("rank00-a.pt" in p for p in problems), problems


def test_stream_drill_flags_a_non_elastic_sampler_and_combos_are_seeded():
    def restart_epoch(n, world_size, rank, *, seed, epoch, consumed, batch_size):
        order = lab04.epoch_order(n, seed, epoch)  # ignores consumed: repeats samples
        return [order[i : i + batch_size][rank::world_size] for i in range(0, n, batch_size)]

    bad = lab04.stream_drill(restart_epoch, lab04.VISIBLE_COMBOS)
    assert len(bad) >= 3 and bad["problem"].str.len().gt(0).all()
    a, b = lab04.random_combos(random.Random(5), 20), lab04.random_combos(random.Random(5), 20)
    assert a == b and all(0 <= c < n and 1 <= bs <= n for n, bs, _, c, _, _ in a), a


def test_the_recovery_oracle_lives_with_the_judge_not_in_the_students_package():
    # issue 33: lab04.recovery_from_log computed exercise 4's answer inside the student's own package
    assert not hasattr(lab04, "recovery_from_log") and not hasattr(lab04.recovery, "recovery_from_log")
    log = {"attempt": [0, 0, 0, 0, 0, 1, 1], "step": [1, 2, 3, 4, 5, 4, 5],
           "time": [1.0, 2.0, 3.0, 4.0, 5.0, 7.5, 8.0]}
    assert judge.recovery_from_log(log) == {"recovery_s": [2.5], "lost_steps": [2]}


def _rank0_only_save(cfg, root):
    tr = lab04.Trainer(cfg)
    while tr.step < 4:
        tr.train_step()
        if tr.rank == 0 and tr.step % 2 == 0:
            lab04.simple_save(root, tr, wait_s=2.0)
    return tr.step


def test_simple_save_on_rank_0_only_fails_fast_naming_the_missing_rank(tmp_path):
    # issue 33: it ended in a barrier that waited out the launcher's 60 s timeout, three times
    import course_dist

    cfg = lab04.Config(stateless_rng=True)
    with pytest.raises(course_dist.RankError) as err:
        course_dist.launch(_rank0_only_save, 2, args=(cfg, str(tmp_path)), timeout=45, stream=False)
    msg = str(err.value).splitlines()[0]
    assert err.value.rank == 0 and "rank(s) [1] did not call simple_save" in msg, msg
    assert "Every rank must call simple_save" in msg, msg
    assert "every" in lab04.simple_save.__doc__.lower(), lab04.simple_save.__doc__


def test_prune_keeps_the_newest_complete_and_never_a_newer_or_incomplete_one(tmp_path):
    for s in (1, 2, 3):
        d = tmp_path / lab04.step_dir_name(s)
        d.mkdir()
        data = f"step {s}".encode()
        (d / "a.pt").write_bytes(data)
        (d / lab04.MANIFEST).write_text(json.dumps(
            {"step": s, "files": {"a.pt": {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}}}))
    (tmp_path / lab04.step_dir_name(0)).mkdir()  # incomplete: never retired
    (tmp_path / lab04.step_dir_name(9)).mkdir()  # newer (broken): never retired
    (tmp_path / f".trash-{lab04.step_dir_name(1)}").mkdir()  # debris of an earlier crashed delete
    assert lab04.prune(tmp_path, tmp_path / lab04.step_dir_name(3), keep=2) == [lab04.step_dir_name(1)]
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == [lab04.step_dir_name(s) for s in (0, 2, 3, 9)], left
    (tmp_path / lab04.step_dir_name(3) / "a.pt").write_bytes(b"step 9")  # same size, other bytes
    assert lab04.verify_dir(tmp_path / lab04.step_dir_name(3), deep=False) is None
    assert "sha256" in lab04.verify_dir(tmp_path / lab04.step_dir_name(3))


def test_simulator_matches_hand_computed_cases():
    # no failures: 3 segments of 10 s, 2 checkpoints of 1 s (the last segment needs none)
    assert lab04.sim.simulate(10, 1, 5, 30, []) == pytest.approx(32.0)
    # a failure at t=15 (inside segment 2): lose 4 s of it, restart 5 s, then 2 segments + 1 checkpoint
    assert lab04.sim.simulate(10, 1, 5, 30, [15.0]) == pytest.approx(15 + 5 + 11 + 10)
    with pytest.raises(ValueError, match=r"interval_s must be > 0, got 0"):
        lab04.sim.simulate(0, 1, 1, 10, [])
    trace = lab04.sim.failure_trace(100.0, 1e5, seed=3)
    assert len(trace) == pytest.approx(1000, rel=0.1)
    assert (trace == lab04.sim.failure_trace(100.0, 1e5, 3)).all()


# ---- judge rules ------------------------------------------------------------------------------------------
def test_judge_same_global_batches_accepts_any_fair_deal_and_names_what_is_wrong():
    ref = [[[5, 7], [1]], [[6], [2]]]  # two ranks, two global batches {5, 6, 7}, {1, 2}
    judge.same_global_batches([[[7], [2]], [[5, 6], [1]]], ref)  # another fair deal
    with pytest.raises(AssertionError, match=r"global batch 0: lost \[6\], extra or repeated \[5\]"):
        judge.same_global_batches([[[5, 7], [1]], [[5], [2]]], ref)
    with pytest.raises(AssertionError, match=r"split unevenly: \[3, 0\]"):
        judge.same_global_batches([[[5, 6, 7], [1]], [[], [2]]], ref)
    with pytest.raises(AssertionError, match=r"ranks have \[2, 1\] batches"):
        judge.same_global_batches([[[5, 7], [1]], [[6, 2]]], ref)


def test_judge_recovery_and_card_rules():
    log = {"attempt": [0, 0, 1], "step": [1, 2, 2], "time": [1.0, 2.0, 3.25]}
    ref = {"log": {"attempt": [0, 1], "step": [1, 1], "time": [0.0, 0.9]}}
    judge.recovery_matches_log({"reported": [1.25], "log": log}, ref)
    with pytest.raises(AssertionError, match=r"reported recovery 3.0000 s, progress.log says 1.2500 s"):
        judge.recovery_matches_log({"reported": [3.0], "log": log}, ref)
    with pytest.raises(AssertionError, match=r"reported 0 recovery times"):
        judge.recovery_matches_log({"reported": [], "log": log}, ref)
    raw = {"step_s": 0.01, "save_s": 0.02, "every": 50.0, "recovery_s": 1.5, "bytes_per_rank": 3e6}
    lim = {"unit": "u", "note": ""}
    card = {"lab": "lab04", "justification": "word " * 30,
            "latency": {"value": 1.5, **lim}, "cost": {"value": 4.0, **lim},
            "capacity": {"value": 3e6, **lim}, "fallback": {"value": 2.5, **lim}}
    judge.card({"card": card, "raw": raw}, None, rtol=0.25)
    with pytest.raises(AssertionError, match=r"fallback"):
        judge.card({"card": {**card, "fallback": {"value": 2.0, **lim}}, "raw": raw}, None, rtol=0.1)
