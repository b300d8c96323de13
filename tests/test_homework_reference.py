"""The reference trainer's contracts of issue 12: CLI end to end, config validation, two-phase publication,
pruning, resume refusals, SLURM requeue after SIGTERM, a hand-set environment without torchrun.

.venv/bin/python -m pytest tests/test_homework_reference.py -q        # ~30 s on 2 quiet cores
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
REF_DIR = ROOT / "solutions" / "homework"
if str(REF_DIR) not in sys.path:
    sys.path.append(str(REF_DIR))  # appended: homework.py (notebook source) must not shadow the skeleton

import fttrainer as ft  # noqa: E402
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


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(REF_DIR), str(ROOT)]), OMP_NUM_THREADS="1")


def _cli(*args: str, pkg: str = "fttrainer", cwd: Path = REF_DIR) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", f"{pkg}.train", *args],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


# ---------------------------------------------------------------- CLI end to end
@pytest.mark.parametrize("pkg,cwd", [("fttrainer", REF_DIR), ("homework", ROOT)])
def test_help_lists_every_option(pkg, cwd):
    r = _cli("--help", pkg=pkg, cwd=cwd)
    assert r.returncode == 0, r.stderr
    assert "--keep-last" in r.stdout and "10% of" in r.stdout and "--requeue" in r.stdout, r.stdout[-800:]


def test_bad_option_and_bad_value_exit_2_naming_them():
    r = _cli("--no-such-option", "1")
    assert r.returncode == 2 and "unrecognized arguments: --no-such-option" in r.stderr, r.stderr
    r = _cli("--epochs", "two")
    assert r.returncode == 2 and "--epochs" in r.stderr and "'two'" in r.stderr, r.stderr
    r = _cli("--keep-last", "0")
    assert r.returncode == 2 and "keep_last must be >= 1, got 0" in r.stderr, r.stderr


# ---------------------------------------------------------------- config
@pytest.mark.parametrize(
    "field,value,words",
    [
        ("keep_last", 0, ">= 1, got 0"),
        ("dropout", 1.5, "in [0, 1), got 1.5"),
        ("lr", 0.0, "> 0, got 0.0"),
        ("optimizer", "adam", "got 'adam'"),
        ("global_batch", 100, "a multiple of micro_batch=128, got 100"),
        ("data_size", 100, ">= global_batch=512, got 100"),
    ],
)
def test_config_validated_when_built(field, value, words):
    with pytest.raises(ValueError, match=f"TrainConfig.{field} must be") as e:
        ft.TrainConfig(**{field: value})
    assert words in str(e.value), str(e.value)


def test_resume_config_mismatch_names_fields():
    cfg = ft.TrainConfig()
    ft.check_resume_config({**cfg.to_dict(), "micro_batch": 32, "ckpt_every": 1, "run_dir": "x"}, cfg)
    with pytest.raises(ft.ConfigMismatchError) as e:
        ft.check_resume_config({**cfg.to_dict(), "lr": 0.5, "epochs": 9}, cfg)
    assert "lr: checkpoint 0.5, now 0.001" in str(e.value) and "epochs: checkpoint 9, now 2" in str(e.value)


def test_changed_lr_or_dropout_refused_on_resume(tmp_path):
    train(ft.TrainConfig(run_dir=str(tmp_path), **{**TINY, "max_steps": 2}))
    for change in ({"lr": 0.02}, {"dropout": 0.1}):
        with pytest.raises(ft.ConfigMismatchError, match=next(iter(change))):
            train(ft.TrainConfig(run_dir=str(tmp_path), **{**TINY, **change}))
    # a non-training field may change: the run continues from step 2
    out = train(ft.TrainConfig(run_dir=str(tmp_path), **{**TINY, "ckpt_every": 3}))
    assert out["resumed_from"] == 2 and out["step"] == 16


# ---------------------------------------------------------------- two-phase publication, load, prune
def _fake_world2(root: Path, step: int) -> Path:
    """A world-2 checkpoint written through the protocol by two 'ranks' in one process (a scripted gather)."""
    from fttrainer import checkpoint as ck

    tmp = root / f".tmp-step-{step:08d}"
    root.mkdir(parents=True, exist_ok=True)
    tmp.mkdir()
    reports = []
    for r in (0, 1):
        files = {ck.rank_file(r): ck._write_durable(tmp / ck.rank_file(r), {"rank": r, "step": step})}
        if r == 0:
            files["shared.pt"] = ck._write_durable(tmp / "shared.pt", {"step": step})
        reports.append({"rank": r, "files": files})
    ck._commit(root, tmp, ck.step_dir(root, step), step, 2, reports, keep_last=3)
    return ck.step_dir(root, step)


def test_manifest_requires_every_rank_file(tmp_path):
    from fttrainer import checkpoint as ck

    path = _fake_world2(tmp_path, 4)
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["world_size"] == 2 and set(manifest["files"]) == {
        "shared.pt",
        "rank-00000.pt",
        "rank-00001.pt",
    }
    assert ft.verify_checkpoint(path)
    assert (
        ft.load_checkpoint(path, 1)[1]["rank"] == 1 and ft.load_checkpoint(path, 2)[1] is None
    )  # a new rank
    # rank 1's file vanished and the manifest does not list it: never resumed
    (path / "rank-00001.pt").unlink()
    manifest["files"].pop("rank-00001.pt")
    (path / "manifest.json").write_text(json.dumps(manifest))
    assert "does not list ['rank-00001.pt']" in ck.checkpoint_problem(path)
    assert ft.latest_checkpoint(tmp_path) is None
    with pytest.raises(FileNotFoundError, match="world-2 checkpoint"):
        ft.load_checkpoint(path, 1)
    # a commit missing a rank's report is refused
    tmp = tmp_path / ".tmp-step-00000009"
    tmp.mkdir()
    with pytest.raises(RuntimeError, match="rank 1 did not report"):
        ck._commit(
            tmp_path,
            tmp,
            ck.step_dir(tmp_path, 9),
            9,
            2,
            [{"rank": 0, "files": {"rank-00000.pt": {}, "shared.pt": {}}}, None],
            3,
        )


def test_restore_refuses_same_world_without_local_state():
    cfg = ft.TrainConfig(**TINY)
    model = ft.build_model(cfg)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = ft.make_scheduler(opt, cfg, 16)
    smp = ft.ElasticSampler(256, 32, 8, 2, 1)
    data = ft.SyntheticDataset(256, 16, 10, 0, "v1", "me")
    shared, _ = ft.capture_state(model, opt, sched, smp, 3, 0, cfg, data.meta, 2)
    with pytest.raises(ValueError, match="rank 1 has no saved state"):
        ft.restore_state(shared, None, model, opt, sched, smp)


def test_prune_keeps_complete_and_never_the_new_one(tmp_path):
    for step in (1, 2, 3):
        ft.save_checkpoint(tmp_path, step, {"step": step}, {"step": step}, 0, 1, keep_last=2)
    (tmp_path / "step-00000009").mkdir()  # incomplete and newer: neither counted nor deleted
    ft.save_checkpoint(tmp_path, 4, {"step": 4}, {"step": 4}, 0, 1, keep_last=2)
    assert sorted(p.name for p in tmp_path.glob("step-*")) == [
        "step-00000003",
        "step-00000004",
        "step-00000009",
    ]
    # a complete checkpoint newer than the one just written is not a reason to delete that one
    ft.save_checkpoint(tmp_path, 10, {"step": 10}, {"step": 10}, 0, 1, keep_last=1)
    assert ft.prune(tmp_path, 1, newest=4) == [] and (tmp_path / "step-00000010").exists()
    with pytest.raises(ValueError, match="keep_last must be >= 1, got 0"):
        ft.save_checkpoint(tmp_path, 11, {"step": 11}, {"step": 11}, 0, 1, keep_last=0)


def test_load_maps_to_cpu(tmp_path):
    path = ft.save_checkpoint(tmp_path, 1, {"step": 1, "t": torch.ones(2)}, {"step": 1}, 0, 1)
    shared, local = ft.load_checkpoint(path, 0)
    assert shared["t"].device.type == "cpu" and local["step"] == 1


# ---------------------------------------------------------------- SIGTERM under SLURM, hand-set environment
def test_sigterm_checkpoints_then_requeues_the_slurm_job(tmp_path, no_surviving_children):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "scontrol").write_text(f'#!/bin/sh\necho "$@" > {tmp_path}/scontrol.args\n')
    (fake / "scontrol").chmod(0o755)
    pkg = ft
    env = {"SLURM_JOB_ID": "4242", "PATH": f"{fake}:{os.environ['PATH']}"}
    run_dir = tmp_path / "run"
    p = kit.start_trainer(
        pkg,
        ["--run-dir", str(run_dir), *kit.cli(epochs=400, ckpt_every=0)],
        env=env,
        log_path=tmp_path / "log.txt",
    )
    try:
        assert kit.wait_for_step(run_dir, 2, timeout=120, p=p), (tmp_path / "log.txt").read_text()[-2000:]
        os.kill(p.pid, signal.SIGTERM)
        rc = p.wait(timeout=60)
    finally:
        kit.stop_tree(p)
    out = (tmp_path / "log.txt").read_text()
    assert rc == 0, out[-2000:]
    assert (tmp_path / "scontrol.args").read_text().split() == ["requeue", "4242"], out[-2000:]
    fin = kit.final(run_dir)
    assert fin["stopped"] == "sigterm" and kit.checkpoint_steps(run_dir)[-1] == fin["step"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_hand_set_environment_without_torchrun(tmp_path, no_surviving_children):
    """RANK/WORLD_SIZE/MASTER_* exported per process, no torchrun agent: rank 0 hosts the store."""
    port = _free_port()
    procs = []
    for r in (0, 1):
        env = dict(
            _env(),
            RANK=str(r),
            LOCAL_RANK=str(r),
            WORLD_SIZE="2",
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=str(port),
        )
        env.pop("TORCHELASTIC_USE_AGENT_STORE", None)
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "fttrainer.train", "--run-dir", str(tmp_path), *kit.cli(epochs=1)],
                cwd=tmp_path,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
        )
    t0 = time.monotonic()
    try:
        outs = [p.communicate(timeout=120)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    assert all(p.returncode == 0 for p in procs), "\n".join(o[-1500:] for o in outs)
    fin = kit.final(tmp_path)
    assert fin["world_size"] == 2 and fin["step"] == 8, (fin, time.monotonic() - t0)


def test_straggler_slow_inside_forward_is_named(tmp_path, no_surviving_children):
    """Accumulation 1 (the case a probe before the step cannot see): rank 1 sleeps in every forward pass."""
    kit.run_trainer(
        ft,
        tmp_path,
        kit.cli(epochs=1, micro_batch=32),
        nproc=2,
        slow_compute=True,
        env={"HW_SLOW_COMPUTE": "1:0.04"},
        timeout=300,
    ).check()
    rep = ft.straggler_report(ft.load_metrics(tmp_path))
    assert rep["slowest_rank"] == 1 and rep["waited_s"] >= 0.5 * 7 * 0.04, rep["text"]
