"""Nothing left behind in the temp dir: ``course_dist._scratch`` folders go at the exit of the process that
made them (never a forked child's), lab05's dump folders go when the notebook's interpreter exits, and a
SIGKILLed torchrun agent's ``torchelastic_*`` folder goes with the drill's own ``TMPDIR``.

.venv/bin/python -m pytest -q -p no:xdist tests/test_scratch.py        # ~20 s on 2 shared cores
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[1]
REF_DIR = ROOT / "solutions" / "homework"
if str(REF_DIR) not in sys.path:
    sys.path.append(str(REF_DIR))  # appended: homework.py (notebook source) must not shadow the skeleton

import fttrainer as ft  # noqa: E402

from course_dist.labkit import homework as kit  # noqa: E402


def _child(code: str, tmp: Path, timeout: float = 120) -> str:
    """Run ``code`` in a fresh interpreter whose temp dir is ``tmp``; its stdout (it must exit 0)."""
    env = dict(os.environ, TMPDIR=str(tmp), PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    r = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert r.returncode == 0, f"child exited {r.returncode}:\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    return r.stdout


def test_scratch_dirs_go_at_exit_of_their_maker_only(tmp_path):
    code = """if True:
        import os, sys
        from course_dist import _scratch
        kept, done = _scratch.tmp_dir("kept_"), _scratch.tmp_dir("done_")
        _scratch.remove(done)
        pid = os.fork()
        if pid == 0:
            sys.exit(0)  # a normal exit of a forked child: atexit runs there, and must not remove `kept`
        os.waitpid(pid, 0)
        print(os.path.isdir(kept), os.path.isdir(done))
    """
    out = _child(code, tmp_path)
    assert out.split() == ["True", "False"], f"expected kept, done removed: got {out!r}"
    assert os.listdir(tmp_path) == [], f"left after the maker's exit: {os.listdir(tmp_path)}"


@pytest.mark.usefixtures("no_surviving_children")
def test_lab05_dump_folders_go_when_the_notebook_exits(tmp_path):
    """run_tool's and fr_dumps' folders exist while the caller reads them, and are gone once it exited;
    fr_analyze's rewritten copy is gone as soon as it returns."""
    code = """if True:
        import json, os, tempfile
        from course_dist.labkit.lab05 import frdumps, hang_tools
        r = hang_tools.run_tool("op_mismatch", 2, "monitored_barrier", pg_timeout=2.0)
        fr = frdumps.fr_dumps([("shape_mismatch", 1)], pg_timeout=2.0)
        ana = hang_tools.fr_analyze(fr[0]["dir"])
        print(json.dumps({"dirs": [r["dir"], fr[0]["dir"]], "live": sorted(os.listdir(tempfile.gettempdir())),
                          "culprit": ana["rank"]}))
    """
    got = json.loads(_child(code, tmp_path).strip().splitlines()[-1])
    live = got["live"]
    assert [Path(d).parent for d in got["dirs"]] == [tmp_path] * 2, got
    assert sum(n.startswith("hang_monitored_barrier_") for n in live) == 1, f"while running: {live}"
    assert sum(n.startswith("fr_dump_") for n in live) >= 1, f"while running: {live}"
    assert not [n for n in live if n.startswith("fr_fixed_")], f"fr_analyze left its copy: {live}"
    assert got["culprit"] == 1, f"fr_analyze on the dumps: expected culprit 1, got {got['culprit']}"
    left = sorted(os.listdir(tmp_path))
    assert not [n for n in left if n.startswith(("fr_dump_", "hang_", "fr_fixed_"))], f"left behind: {left}"


@pytest.mark.usefixtures("no_surviving_children")
def test_sigkilled_torchrun_drill_leaves_no_torchelastic_folder(tmp_path, monkeypatch):
    """A world-1 torchrun job started through the drill helpers, SIGKILLed (agent and worker) mid-run: its
    torchelastic_* folder was in the job's own TMPDIR, which stop_tree removes."""
    priv = tmp_path / "tmp"
    priv.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(priv))  # where the helper makes the job's TMPDIR
    run_dir = tmp_path / "run"
    p = kit.start_trainer(
        ft,
        ["--run-dir", str(run_dir), *kit.cli(epochs=400, ckpt_every=0)],
        torchrun=True,
        log_path=tmp_path / "log.txt",
    )
    try:
        assert kit.wait_for_step(run_dir, 2, timeout=120, p=p), (tmp_path / "log.txt").read_text()[-2000:]
        inside = [n for n in os.listdir(p.tmpdir) if n.startswith("torchelastic_")]
    finally:
        kit.stop_tree(p)  # SIGKILL: the agent cannot remove its folder
    assert Path(p.tmpdir).parent == priv and len(inside) == 1, f"job TMPDIR {p.tmpdir}: {inside}"
    assert os.listdir(priv) == [], f"left after stop_tree: {os.listdir(priv)}"


@pytest.mark.usefixtures("no_surviving_children")
def test_scaling_run_killed_mid_job_leaves_no_torchelastic_folder(tmp_path, monkeypatch):
    """The scaling experiment's ``_run`` (reference package): its torchrun agent SIGKILLed from outside while
    the folder exists; ``_run`` reports the failure and removes the job's temp dir."""
    from fttrainer import scaling

    priv = tmp_path / "tmp"
    priv.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(priv))
    run_dir = tmp_path / "out" / "run"
    seen: list[str] = []

    def killer() -> None:  # once the worker logs, SIGKILL the agent's whole session (as a fault would)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            agents = [c for c in psutil.Process().children() if "torch.distributed.run" in c.cmdline()]
            folders = [str(f) for f in priv.glob("scaling-tmp-*/torchelastic_*")]
            if agents and folders and (run_dir / "metrics" / "rank-0.jsonl").exists():
                seen.extend(folders)
                os.killpg(agents[0].pid, signal.SIGKILL)
                return
            time.sleep(0.05)

    run_dir.mkdir(parents=True)
    t = threading.Thread(target=killer, daemon=True)
    t.start()
    args = [*kit.cli(epochs=400, ckpt_every=0)]
    with pytest.raises(RuntimeError, match="world 1 run failed"):
        scaling._run("fttrainer", 1, args, run_dir, timeout=120)
    t.join(5)
    assert seen, "the killer never saw the job's torchelastic_* folder"
    assert os.listdir(priv) == [], f"left after _run: {os.listdir(priv)}"
