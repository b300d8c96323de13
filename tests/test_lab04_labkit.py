"""Fast unit tests of lab 04's machinery (course_dist/labkit/lab04*.py) - never of the exercises' answers.

    .venv/bin/python -m pytest tests/test_lab04_labkit.py -q

The writers and samplers below are deliberately naive (wrong) ones: the drills must catch them.
"""

from __future__ import annotations

import json
import os
import signal

import pytest
import torch

from course_dist.labkit import lab04, lab04_crash, lab04_drills, lab04_elastic, lab04_sim


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
    import random

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


def _naive_save(root, step, parts, *, keep=3):
    """Wrong on purpose: writes straight into the final directory, no fsync, no latest."""
    d = os.path.join(root, f"step-{step:08d}")
    os.makedirs(d, exist_ok=True)
    files = {}
    for name, obj in parts.items():
        torch.save(obj, os.path.join(d, f"{name}.pt"))
        data = open(os.path.join(d, f"{name}.pt"), "rb").read()
        import hashlib

        files[f"{name}.pt"] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    with open(os.path.join(d, "manifest.json"), "w") as f:
        json.dump({"step": step, "files": files}, f)
    return d


def test_protocol_and_oracle_catch_a_naive_writer(tmp_path):
    res = lab04_crash.run_in_child(lambda: _naive_save(tmp_path, 2, lab04_crash.demo_parts(2)), tmp_path)
    assert res.exitcode == 0, res.error
    problems = lab04_drills.protocol_problems(res.records, 2)
    assert any("no rename publishes step-00000002" in p for p in problems), problems
    assert any("opened for writing inside a published step directory" in p for p in problems), problems
    d = tmp_path / "step-00000002"
    assert lab04_crash.verify_dir(d) is None
    data = bytearray((d / "model.pt").read_bytes())
    data[100] ^= 1
    (d / "model.pt").write_bytes(bytes(data))
    assert "sha256" in lab04_crash.verify_dir(d)


def test_run_in_child_kills_before_the_requested_op_and_tears_writes(tmp_path):
    def writer():
        with open(tmp_path / "a.bin", "wb") as f:
            f.write(b"x" * 1000)

    res = lab04_crash.run_in_child(writer, tmp_path, kill_at=2)  # op 1 = open, op 2 = write (cut in half)
    assert res.signal == signal.SIGKILL and [r["op"] for r in res.records] == ["open", "write"]
    assert (tmp_path / "a.bin").stat().st_size == 500


def test_stream_drill_flags_a_non_elastic_sampler():
    def restart_epoch(n, world_size, rank, *, seed, epoch, consumed, batch_size):
        order = lab04.epoch_order(n, seed, epoch)  # ignores consumed: repeats samples
        return [order[i : i + batch_size][rank::world_size] for i in range(0, n, batch_size)]

    bad = lab04_elastic.stream_drill(restart_epoch)
    assert len(bad) >= 3 and bad["problem"].str.len().gt(0).all()


def test_simulator_matches_hand_computed_cases():
    # no failures: 3 segments of 10 s, 2 checkpoints of 1 s (the last segment needs none)
    assert lab04_sim.simulate(10, 1, 5, 30, []) == pytest.approx(32.0)
    # a failure at t=15 (inside segment 2): lose 4 s of it, restart 5 s, then 2 segments + 1 checkpoint
    assert lab04_sim.simulate(10, 1, 5, 30, [15.0]) == pytest.approx(15 + 5 + 11 + 10)
    with pytest.raises(ValueError, match=r"interval_s must be > 0, got 0"):
        lab04_sim.simulate(0, 1, 1, 10, [])
    trace = lab04_sim.failure_trace(100.0, 1e5, seed=3)
    assert len(trace) == pytest.approx(1000, rel=0.1)
    assert (trace == lab04_sim.failure_trace(100.0, 1e5, 3)).all()
