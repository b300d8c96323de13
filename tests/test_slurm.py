"""Issue 35: `autograder/slurm/grade_array.sbatch` under a real SLURM scheduler, on one node.

The fixture installs Debian's slurmctld, slurmd, slurm-client and munge when they are missing (as root; the
test skips, saying why, only when they cannot be installed), starts munged (if none answers), slurmctld and
slurmd on localhost with a configuration of its own (ports 16817/16818, state in a temporary folder), and
stops every daemon it started when the module ends, whatever happened.

The test grades a class of 12 submissions of the fixture lab (reference answers, answers missing one
exercise, a misnamed notebook, a broken file) as an array of 3 shards, cancels one array task
(`scancel JOB_1`) once it has recorded a row and before it finished, resubmits that index (it grades only
what is missing), merges with a SLURM job as the sbatch file documents, and compares the merged CSV with a
one-machine run of the same class and seed: identical rows (all columns but `seconds`). Fast mode, one
worker per task, bounded waits.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograder.config import CourseConfig

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]

ROOT = Path(__file__).resolve().parents[1]
SBATCH = ROOT / "autograder" / "slurm" / "grade_array.sbatch"
PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")
BINARIES = ("slurmctld", "slurmd", "sbatch", "squeue", "scancel", "scontrol", "sinfo", "munged", "munge")
LAB, SEED, N = "fixlab", 7, 3
GRADE_ARGS = "--unsafe-no-sandbox --timeout 150 --cell-timeout 45"  # the scheduler is under test, not bwrap


def _have_slurm() -> bool:
    return all(shutil.which(b) for b in BINARIES)


def _install_or_skip() -> None:
    if _have_slurm():
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.skip(
            f"SLURM is not installed and cannot be here (needs root and apt-get): {' '.join(PACKAGES)}"
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    cmd = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *PACKAGES]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:  # a stale package list: update once, then again
        subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True, timeout=300)
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if r.returncode != 0 or not _have_slurm():
        pytest.skip(f"cannot install SLURM ({' '.join(PACKAGES)}): {(r.stderr or r.stdout)[-400:]}")


def _munge_answers() -> bool:
    r = subprocess.run(["munge", "-n"], capture_output=True, timeout=20)
    return r.returncode == 0


CONF = """ClusterName=coursetest
SlurmctldHost={host}
SlurmUser=root
SlurmctldPort=16817
SlurmdPort=16818
AuthType=auth/munge
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
KillWait=5
InactiveLimit=0
MinJobAge=600
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
NodeName={host} CPUs=6 RealMemory=8000 State=UNKNOWN
PartitionName=grading Nodes={host} Default=YES MaxTime=60 State=UP
"""


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)


def _job_processes(conf: Path) -> list[int]:
    """Processes started by this cluster's jobs (their environment names this test's SLURM_CONF)."""
    mark = f"SLURM_CONF={conf}".encode()
    pids = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit() and int(p.name) != os.getpid():
            try:
                if mark in (p / "environ").read_bytes().split(b"\0"):
                    pids.append(int(p.name))
            except OSError:
                continue
    return pids


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201 - a generator fixture
    """A one-node SLURM cluster on localhost: its environment (SLURM_CONF) for sbatch and friends."""
    _install_or_skip()
    d = tmp_path_factory.mktemp("slurm")
    for sub in ("state", "spool"):
        (d / sub).mkdir()
    host = socket.gethostname().split(".")[0]
    conf = d / "slurm.conf"
    conf.write_text(CONF.format(host=host, d=d))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    started: list[subprocess.Popen] = []
    try:
        if not _munge_answers():
            run = Path("/run/munge")
            run.mkdir(exist_ok=True)
            munge = pwd.getpwnam("munge")
            os.chown(run, munge.pw_uid, munge.pw_gid)
            started.append(
                subprocess.Popen(
                    ["runuser", "-u", "munge", "--", "munged", "--foreground"],
                    stdout=subprocess.DEVNULL,
                    stderr=open(d / "munged.log", "w"),  # noqa: SIM115 - lives as long as the daemon
                )
            )
            for _ in range(100):
                if _munge_answers():
                    break
                time.sleep(0.1)
            else:
                pytest.fail(f"munged did not answer: {(d / 'munged.log').read_text()[-1000:]}")
        for cmd in (["slurmctld", "-D", "-c", "-i", "-f", str(conf)], ["slurmd", "-D", "-f", str(conf)]):
            started.append(
                subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            )
            time.sleep(1.0)
        deadline = time.monotonic() + 90
        state = ""
        while time.monotonic() < deadline:
            r = subprocess.run(
                ["sinfo", "-h", "-o", "%T"], env=env, capture_output=True, text=True, timeout=20
            )
            state = r.stdout.strip()
            if state == "idle":
                break
            time.sleep(1.0)
        else:
            logs = {
                n: (d / n).read_text()[-800:] for n in ("slurmctld.log", "slurmd.log") if (d / n).exists()
            }
            pytest.fail(f"the node never became idle (sinfo: {state!r}); logs: {logs}")
        yield env
    finally:
        subprocess.run(["scancel", "--full", "--user=root"], env=env, capture_output=True, timeout=30)
        time.sleep(1.0)
        for pid in _job_processes(conf):  # anything a cancelled job left behind
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for proc in reversed(started):
            _stop(proc)


# ---- the class ----------------------------------------------------------------------------------------
def _course(tmp: Path) -> CourseConfig:
    from autograder.release import release
    from autograder.tests.conftest import FIXTURE

    shutil.copytree(FIXTURE, tmp, dirs_exist_ok=True)
    cfg = CourseConfig(root=tmp)
    release(cfg)
    return cfg


def _class(cfg: CourseConfig, subs: Path) -> list[str]:
    """12 students: reference answers, answers with `add` left as released (a deterministic failure: an
    untouched release's two ranks both raise in allsum, and which one the reason names is a race), one
    misnamed notebook, one broken file."""
    import copy

    from autograder.mutants import reference_submission, release_notebook
    from autograder.tests.conftest import write_submission

    ref, blank = reference_submission(cfg, LAB), release_notebook(cfg, LAB)
    stub = {c.metadata.get("nbgrader", {}).get("grade_id"): c.source for c in blank.cells}
    partial = copy.deepcopy(ref)
    for cell in partial.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "add_solution":
            cell.source = stub["add_solution"]
    names = [f"st{i:02d}" for i in range(1, 13)]
    for i, name in enumerate(names):
        path = write_submission(subs, name, LAB, ref if i % 2 == 0 else partial)
        if name == "st03":
            path.rename(path.with_name(f"{LAB} (1).ipynb"))
        if name == "st06":
            path.write_text("{ not a notebook")
    return names


def _sh(args: list[str], env: dict, cwd: Path, timeout: float = 60) -> str:
    r = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{' '.join(args)} exited {r.returncode}: {r.stderr[-2000:]}"
    return r.stdout.strip()


def _rows(csv: Path) -> list[dict]:
    from autograder.merge import read_csv

    df = read_csv(csv).drop(columns=["seconds"]).sort_values(["lab", "student"])
    return df.astype(str).to_dict("records")


def _wait_gone(job: str, env: dict, cwd: Path, limit: float) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if not _sh(["squeue", "-h", "-j", job, "-o", "%i %T"], env, cwd):
            return
        time.sleep(2.0)
    pytest.fail(f"job {job} still queued or running after {limit:.0f} s")


def test_array_job_with_a_killed_task_merges_to_the_one_machine_rows(slurm, tmp_path_factory) -> None:  # noqa: ANN001
    cluster = _course(tmp_path_factory.mktemp("cluster_course"))
    single = _course(tmp_path_factory.mktemp("single_course"))
    subs = tmp_path_factory.mktemp("collected")
    names = _class(cluster, subs)
    where = cluster.root
    (where / "build" / "slurm").mkdir(parents=True, exist_ok=True)  # SLURM opens the log before the job runs
    env = {
        **slurm,
        "SUBMISSIONS": str(subs),
        "SEED": str(SEED),
        "N": str(N),
        "WORKERS": "1",
        "PYTHON": sys.executable,
        "COURSE_ROOT": str(where),
        "GRADE_ARGS": GRADE_ARGS,
    }
    submit = ["sbatch", "--parsable", "--cpus-per-task=1", "--mem=1000M", "--time=00:20:00", "--export=ALL"]

    t0 = time.monotonic()
    job = _sh([*submit, f"--array=0-{N - 1}", str(SBATCH)], env, where)
    # the node dies under shard 1: cancel its task once it recorded a row and before it finished
    shard1 = where / "build" / "shards" / f"1-of-{N}" / "grades.csv"
    mine = [s for i, s in enumerate(sorted(names)) if i % N == 1]
    deadline = time.monotonic() + 400
    while time.monotonic() < deadline:
        if shard1.exists() and len(_rows(shard1)) >= 1:
            break
        time.sleep(0.3)
    else:
        pytest.fail(f"shard 1 recorded no row within 400 s: {sorted((where / 'build' / 'slurm').iterdir())}")
    _sh(["scancel", f"{job}_1"], env, where)
    _wait_gone(job, env, where, 600)
    array_s = time.monotonic() - t0
    state = _sh(["scontrol", "show", "job", f"{job}_1"], env, where)
    assert "JobState=CANCELLED" in state, state[:600]
    left = len(_rows(shard1))
    assert left < len(mine), f"shard 1 finished all {len(mine)} rows before the kill: the test saw no loss"

    t1 = time.monotonic()
    _sh([*submit, "--wait", "--array=1", str(SBATCH)], env, where, timeout=600)  # grades only what is missing
    retry_s = time.monotonic() - t1
    assert sorted(r["student"] for r in _rows(shard1)) == mine, _rows(shard1)
    shards = " ".join(str(where / "build" / "shards" / f"{k}-of-{N}") for k in range(N))
    merge = f"{sys.executable} -m autograder --root {where} merge {shards}"
    _sh([*submit, "--wait", "--wrap", merge], env, where, timeout=300)
    merged = _rows(where / "build" / "grades.csv")

    t2 = time.monotonic()
    _sh(
        [
            sys.executable,
            "-m",
            "autograder",
            "--root",
            str(single.root),
            "grade",
            str(subs),
            "--seed",
            str(SEED),
            "--workers",
            "2",
            *GRADE_ARGS.split(),
        ],
        {**os.environ},
        single.root,
        timeout=900,
    )
    single_s = time.monotonic() - t2
    alone = _rows(single.build / "grades.csv")
    print(
        f"\nSLURM: {len(names)} submissions in {N} shards: array {array_s:.0f} s (task 1 cancelled after "
        f"{left} of {len(mine)} rows), resubmitted task {retry_s:.0f} s; "
        f"one machine (2 workers) {single_s:.0f} s"
    )
    assert len(merged) == len(names), [r["student"] for r in merged]
    statuses = sorted({r["status"] for r in merged})
    assert statuses == ["error", "missing", "ok"], statuses
    scores = sorted({r["score"] for r in merged if r["status"] == "ok"})
    assert scores == ["60.0", "90.0"], f"ok scores {scores}: expected 90 (reference) and 60 (add missing)"
    diff = [(a, b) for a, b in zip(merged, alone, strict=False) if a != b]
    assert merged == alone, f"merged SLURM rows differ from the one-machine run's: {diff[:3]}"
