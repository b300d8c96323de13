"""Reference trainer (solutions/homework/fttrainer), fast checks in one process plus one real torchrun drill.

.venv/bin/python -m pytest tests/test_homework_unit.py -q        # ~40 s on 2 cores
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
REF_DIR = ROOT / "solutions" / "homework"
if str(REF_DIR) not in sys.path:
    sys.path.append(
        str(REF_DIR)
    )  # appended: homework.py (notebook source) must not shadow the skeleton package

import fttrainer as ft  # noqa: E402
from fttrainer.config import build_parser, field_docs, to_cli  # noqa: E402
from fttrainer.trainer import train  # noqa: E402

from course_dist.labkit import homework as kit  # noqa: E402

TINY = dict(
    data_size=256,
    global_batch=32,
    micro_batch=8,
    in_dim=16,
    hidden=32,
    depth=2,
    epochs=2,
    ckpt_every=4,
    keep_last=2,
    lr=0.01,
    warmup_steps=2,
    log_every=0,
)


# ---------------------------------------------------------------- config
def test_every_field_has_a_docstring_and_cli_help():
    docs = field_docs()
    names = [f.name for f in ft.TrainConfig.__dataclass_fields__.values()]
    assert set(docs) == set(names), set(names) - set(docs)
    helps = {a.dest: a.help for a in build_parser()._actions if a.dest in names}
    assert all(helps[n] == docs[n].replace("%", "%%") and len(helps[n]) > 10 for n in names)


def test_cli_roundtrip_and_dict_roundtrip():
    cfg = ft.TrainConfig(run_dir="x", lr=0.5, log_samples=True, data_version="v9")
    assert ft.TrainConfig.from_cli(to_cli(cfg)) == cfg
    assert ft.TrainConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match="unknown TrainConfig fields"):
        ft.TrainConfig.from_dict({"nope": 1})


# ---------------------------------------------------------------- ddp / sampler
def test_global_batch_must_divide():
    assert ft.grad_accum_steps(512, 128, 2) == 2
    with pytest.raises(ValueError, match=r"global_batch=96 is not divisible by .* 32 x 2 = 64"):
        ft.grad_accum_steps(96, 32, 2)


@pytest.mark.parametrize("before,after", [(2, 1), (1, 4), (4, 2)])
def test_sampler_resize_exactly_once(before, after):
    def ranks(world, state=None, stop=None):
        out = []
        for r in range(world):
            s = ft.ElasticSampler(256, 32, 8, world, r, seed=5)
            if state:
                s.load_state_dict(state)
            s.set_epoch(0)
            for i, mbs in enumerate(s):
                if stop is not None and i == stop:
                    break
                out += [x for m in mbs for x in m]
            last = s
        return out, last.state_dict()

    first, _ = ranks(before, stop=3)
    s = ft.ElasticSampler(256, 32, 8, before, 0, seed=5)
    s.set_epoch(0)
    it = iter(s)
    for _ in range(3):
        next(it)
    rest, _ = ranks(after, state=s.state_dict())
    assert sorted(first + rest) == list(range(256))


def test_sampler_refuses_other_global_batch():
    s = ft.ElasticSampler(256, 32, 8, 2, 0)
    with pytest.raises(ValueError, match="checkpoint has global_batch=32, this run has 64"):
        ft.ElasticSampler(256, 64, 8, 2, 0).load_state_dict(s.state_dict())


# ---------------------------------------------------------------- checkpoints
def test_atomic_save_latest_prune_and_corruption(tmp_path):
    for step in (1, 2, 3):
        ft.save_checkpoint(tmp_path, step, {"step": step}, {"step": step}, 0, 1, keep_last=2)
    assert sorted(p.name for p in tmp_path.glob("step-*")) == ["step-00000002", "step-00000003"]
    assert (tmp_path / "latest").read_text() == "step-00000003"
    manifest = json.loads((tmp_path / "step-00000003" / "manifest.json").read_text())
    assert set(manifest["files"]) == {"shared.pt", "rank-00000.pt"}
    (tmp_path / "step-00000003" / "rank-00000.pt").write_bytes(b"torn")
    assert not ft.verify_checkpoint(tmp_path / "step-00000003")
    assert ft.latest_checkpoint(tmp_path).name == "step-00000002"
    (tmp_path / ".tmp-step-00000009").mkdir()  # debris of a killed save: never a candidate, pruned later
    assert ft.latest_checkpoint(tmp_path).name == "step-00000002"
    ft.save_checkpoint(tmp_path, 4, {"step": 4}, {"step": 4}, 0, 1, keep_last=2)
    assert not (tmp_path / ".tmp-step-00000009").exists()
    with pytest.raises(ValueError, match="keep_last must be >= 1, got 0"):
        ft.prune(tmp_path, 0)


def test_dataset_contract():
    meta = ft.SyntheticDataset(64, 4, 2, 0, "v1", "me").meta
    ft.check_dataset(meta.to_dict(), meta)
    with pytest.raises(ft.DatasetMismatchError, match="'v0'.*'v1'"):
        ft.check_dataset({**meta.to_dict(), "version": "v0"}, meta)
    other = ft.SyntheticDataset(64, 4, 2, 1, "v1", "me").meta
    with pytest.raises(ft.DatasetMismatchError, match="contents changed"):
        ft.check_dataset(meta.to_dict(), other)


# ---------------------------------------------------------------- training in this process (world 1)
def _cfg(tmp_path, **kw):
    return ft.TrainConfig(run_dir=str(tmp_path), **{**TINY, **kw})


def test_resume_is_bitwise_with_dropout_mid_epoch(tmp_path):
    full = train(_cfg(tmp_path / "full", dropout=0.3))
    train(_cfg(tmp_path / "part", dropout=0.3, max_steps=6))  # step 6 of 8: mid-epoch, mid-schedule
    again = train(_cfg(tmp_path / "part", dropout=0.3))
    assert again["resumed_from"] == 6 and again["param_digest"] == full["param_digest"]
    shared = torch.load(tmp_path / "part" / "ckpt" / "step-00000016" / "shared.pt", weights_only=False)
    assert shared["config"]["dropout"] == 0.3 and shared["dataset"]["version"] == "v1"
    start = json.loads((tmp_path / "part" / "metrics" / "rank-0.jsonl").read_text().splitlines()[0])
    assert start["event"] == "start" and start["dataset"]["owner"] == "course-staff"


def test_wrong_dataset_version_refused(tmp_path):
    train(_cfg(tmp_path, max_steps=2))
    with pytest.raises(ft.DatasetMismatchError, match="v2"):
        train(_cfg(tmp_path, data_version="v2"))


def test_straggler_report_names_the_slow_rank():
    import pandas as pd

    rows = [
        {"step": s, "rank": r, "attempt": 0, "step_s": 0.2, "wait_s": 0.1 * (r != 2), "sync_s": 0.01}
        for s in range(1, 6)
        for r in range(4)
    ]
    rep = ft.straggler_report(pd.DataFrame(rows))
    assert rep["slowest_rank"] == 2 and abs(rep["waited_s"] - 3 * 4 * 0.1) < 1e-9, rep["text"]


# ---------------------------------------------------------------- one real torchrun drill
def test_torchrun_sigkill_restart_is_bitwise(tmp_path):
    pkg = ft
    args = kit.cli(epochs=2, ckpt_every=3)  # checkpoints mid-epoch: the sampler position must survive too
    base = kit.run_trainer(pkg, tmp_path / "base", args, nproc=2, timeout=300).check()
    drill = kit.run_trainer(
        pkg, tmp_path / "kill", args, nproc=2, max_restarts=3, timeout=300, env={"COURSE_FAULTS": "kill:1@10"}
    ).check()
    assert kit.final(tmp_path / "kill")["resumed_from"] == 9, drill.output[-2000:]
    diff = kit.bitwise_equal(kit.final_params(tmp_path / "base"), kit.final_params(tmp_path / "kill"))
    assert not diff, f"{diff}\n{base.output[-1000:]}"


# ---------------------------------------------------------------- durable writes, boot times, first task
def test_write_durable_reports_the_file_sha256_and_restores_crc32(tmp_path):
    import hashlib

    from fttrainer import checkpoint as ck

    before = torch.serialization.get_crc32_options()
    state = {"w": torch.arange(100_000.0), "step": 3}
    rep = ck._write_durable(tmp_path / "x.pt", state)
    data = (tmp_path / "x.pt").read_bytes()
    assert rep == {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}, (
        f"report {rep}, file sha256 {hashlib.sha256(data).hexdigest()} of {len(data)} bytes")
    assert torch.serialization.get_crc32_options() == before, "torch's crc32 option was not restored"
    got = torch.load(tmp_path / "x.pt", weights_only=True)
    assert torch.equal(got["w"], state["w"]) and got["step"] == 3, f"round trip lost the state: {got}"


def test_process_start_time_is_before_now_and_recent():
    import time

    from fttrainer.metrics import process_start_time

    t = process_start_time()
    assert t is not None and time.time() - 3600 < t <= time.time(), f"process start {t}, now {time.time()}"


def test_first_unfinished_names_a_ddp_task_in_the_skeleton_and_none_in_the_reference():
    import importlib

    skeleton = importlib.import_module("homework")
    msg = kit.first_unfinished(skeleton)
    assert msg is not None and msg.startswith("homework task ddp:"), f"skeleton's first task: {msg!r}"
    assert kit.first_unfinished(ft) is None, f"the reference has a stub left: {kit.first_unfinished(ft)!r}"


def test_kill_plan_has_every_class_at_every_seed():
    """The recovery drill's three SIGKILLs: at every grading seed one before the first checkpoint, one right
    after a checkpoint, one mid-interval, each after the previous attempt's resume point; both ranks die."""
    import random

    for seed in range(500):
        plan = kit.kill_plan(random.Random(20260 + seed), ckpt_every=4, steps=24)
        (r0, before), (r1, after), (_, mid) = plan
        assert 1 <= before < 4 and after % 4 == 0 and 4 <= after < mid < 24 and mid % 4, (seed, plan)
        assert {r0, r1} == {0, 1}, (seed, r0, r1)
    with pytest.raises(ValueError, match="ckpt_every"):
        kit.kill_plan(random.Random(0), ckpt_every=4, steps=5)


@pytest.mark.parametrize(("warm", "total"), [(4, 20), (0, 8), (1, 9), (3, 17), (6, 30)])
def test_scheduler_matches_torchs_linear_then_cosine(warm, total):
    """The stated schedule is torch's own LinearLR (lr/W -> lr over the warm-up) then CosineAnnealingLR (to
    eta_min = 10 % of lr over total - W steps), chained by SequentialLR: the oracle of the notebook's
    values."""
    lr, sched = 0.1, torch.optim.lr_scheduler

    def curve(opt, s):
        out = []
        for _ in range(total + 1):
            out.append(opt.param_groups[0]["lr"])
            opt.step()
            s.step()
        return out

    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=lr)
    got = curve(opt, ft.make_scheduler(opt, ft.TrainConfig(warmup_steps=warm, lr=lr), total_steps=total))
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=lr)
    cosine = sched.CosineAnnealingLR(opt, T_max=total - warm, eta_min=0.1 * lr)
    oracle = cosine if warm == 0 else sched.SequentialLR(
        opt, [sched.LinearLR(opt, 1 / warm, 1.0, total_iters=max(1, warm - 1)), cosine], milestones=[warm])
    want = curve(opt, oracle)
    assert got == pytest.approx(want, rel=1e-9, abs=0.0), f"W={warm} T={total}: got {got}, torch {want}"
    assert got[-1] == pytest.approx(0.1 * lr, rel=1e-12), f"floor after {total} steps: {got[-1]}"
