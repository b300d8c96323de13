"""Homework benchmark: does the reference trainer earn its scaling, what do its checkpoints cost, how fast
does it recover - each next to what a user would do instead.

    python -m bench.bench_homework                                        # full (~4-6 min on 2 cores)
    python -c "from bench.bench_homework import main; main(quick=True)"   # smoke run (~1.5 min)

Writes ``bench/results/homework.md``. Everything runs the reference package ``solutions/homework/fttrainer``
as real ``torchrun --standalone`` jobs, one thread per rank (``OMP_NUM_THREADS=1``, ``--threads 1``).

1. Weak-scaling efficiency at world 2 (target >= 0.8) on the default workload (MLP 256-1024x3-10, 2.4 M
   params, 1024 samples per rank per step as 8 micro-batches of 128 under ``no_sync``: one all-reduce of
   9.5 MB per 1024 samples, ~15 GFLOP of compute per rank) and on a communication-bound workload (36 M
   params, 8 samples per rank, plain SGD and one all-reduce of 142 MB per step: ~1.7 GFLOP per 142 MB,
   target < 0.6). Rounds
   alternate the workloads (A B A B ...); the median over >= 5 rounds is reported with the range (other jobs
   on the 2 cores hit world 2 hardest).
2. Checkpoint cost: one atomic save (temp dir, fsync, manifest, rename) vs a bare ``torch.save`` of the same
   state, and the overhead at the default interval (``ckpt_every=50``) = save time / (50 x step time), target
   < 5%.
3. Recovery: SIGKILL of rank 1 under ``torchrun --max-restarts 3`` -> first resumed step (wall clock from the
   last step of attempt 0 to the first step of attempt 1), split into restart (death noticed, workers
   restarted), import, rendezvous, load and first step, with the work redone since the last checkpoint; and
   the SIGTERM checkpoint's time against torchrun's 30 s SIGTERM -> SIGKILL grace.
"""

from __future__ import annotations

import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
REF = ROOT / "solutions" / "homework"
RESULT = ROOT / "bench" / "results" / "homework.md"
log = logging.getLogger("bench.homework")
if str(REF) not in sys.path:
    sys.path.append(
        str(REF)
    )  # appended: the notebook source homework.py must not shadow the skeleton package

import fttrainer  # noqa: E402
from fttrainer.metrics import load_metrics  # noqa: E402

from bench import machine, write  # noqa: E402
from course_dist import _scratch  # noqa: E402


def _torchrun(
    nproc: int, args: list[str], run_dir: Path, env: dict[str, str] | None = None, timeout: float = 300
) -> None:
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={nproc}",
        "--max-restarts=3",
        "--monitor-interval=0.5",
        "-m",
        "fttrainer.train",
        "--run-dir",
        str(run_dir),
        *args,
    ]
    full = dict(
        os.environ, OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join([str(REF), str(ROOT)]), **(env or {})
    )
    tmp = _scratch.child_tmp(full)  # torchrun's own folder goes there (left by a killed agent): removed below
    with open(run_dir.parent / f"{run_dir.name}.log", "w") as out:
        p = subprocess.Popen(
            cmd, env=full, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, cwd=run_dir.parent
        )
        try:
            rc = p.wait(timeout=timeout)
        finally:
            try:
                os.killpg(p.pid, 9)
            except ProcessLookupError:
                pass
            p.wait()
            _scratch.remove(tmp)
    if rc != 0:
        raise RuntimeError(
            f"{cmd} exited {rc}: {(run_dir.parent / f'{run_dir.name}.log').read_text()[-2000:]}"
        )


WORKLOADS = {
    "default: 2.4 M params, 1024/rank, accum 8 (no_sync)": dict(
        per_rank_batch=1024, micro_batch=128, extra_args=()
    ),
    # SGD: AdamW's update of 36 M parameters is replicated work that scales perfectly and would hide the
    # all-reduce (0.67 on a quiet box with it, 0.51 without)
    "comm-bound: 36 M params, 8/rank, SGD, one 142 MB all-reduce per step": dict(
        per_rank_batch=8,
        micro_batch=8,
        extra_args=("--hidden", "4096", "--in-dim", "512", "--optimizer", "sgd"),
    ),
}


def scaling(work: Path, quick: bool) -> pd.DataFrame:
    """Rounds alternate the workloads (A B A B ...) so a busy machine slows both alike; median over rounds."""
    steps, worlds, rounds = (6, (1, 2), 1) if quick else (20, (1, 2), 5)
    frames = []
    for r in range(rounds):
        for name, kw in WORKLOADS.items():
            df = fttrainer.run_scaling(work / f"r{r}-{name[:5]}", worlds=worlds, steps=steps, skip=3, **kw)
            frames.append(df.assign(workload=name, round=r))
    allr = pd.concat(frames, ignore_index=True)
    cols = ["step_s", "samples_per_s", "wait_s", "efficiency", "cost_per_sample", "usd_per_1m_samples"]
    med = allr.groupby(["workload", "world", "global_batch"], sort=False)[cols].median().reset_index()
    spread = allr.groupby(["workload", "world"], sort=False)["efficiency"].agg(["min", "max"]).reset_index()
    med["efficiency_range"] = [f"{a:.2f}-{b:.2f}" for a, b in zip(spread["min"], spread["max"], strict=True)]
    med["rounds"] = rounds
    return med


def checkpoint_cost(work: Path, quick: bool) -> pd.DataFrame:
    """The trainer's own checkpoint (default model + AdamW) saved atomically and with a durable torch.save
    (file fsync + directory fsync), interleaved; seconds min/median/max."""
    import torch

    cfg = fttrainer.TrainConfig()
    data = fttrainer.SyntheticDataset(
        cfg.data_size, cfg.in_dim, cfg.classes, cfg.data_seed, cfg.data_version, "b"
    )
    model = fttrainer.build_model(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    model(torch.randn(4, cfg.in_dim)).sum().backward()
    opt.step()  # materialise AdamW moments: the checkpoint has its real size
    sched = fttrainer.make_scheduler(opt, cfg, 100)
    smp = fttrainer.ElasticSampler(len(data), cfg.global_batch, cfg.micro_batch, 1, 0)
    atomic, durable = [], []
    for i in range(5 if quick else 10):
        shared, local = fttrainer.capture_state(model, opt, sched, smp, i + 1, 0, cfg, data.meta, 1)
        for name in ("atomic", "durable") if i % 2 else ("durable", "atomic"):
            t = time.perf_counter()
            if name == "atomic":
                fttrainer.save_checkpoint(work / "ckpt", i + 1, shared, local, 0, 1, keep_last=2)
                atomic.append(time.perf_counter() - t)
            else:
                with open(work / "plain.pt", "wb") as f:
                    torch.save({**shared, **local}, f)
                    f.flush()
                    os.fsync(f.fileno())
                fd = os.open(work, os.O_RDONLY)
                os.fsync(fd)
                os.close(fd)
                durable.append(time.perf_counter() - t)
    size = sum(p.stat().st_size for p in (work / "ckpt").glob("step-*/*")) / 2
    return pd.DataFrame(
        [
            {
                "save": "atomic save_checkpoint (staging folder, sha256, fsyncs, manifest, rename, latest)",
                "min_s": min(atomic),
                "median_s": statistics.median(atomic),
                "max_s": max(atomic),
                "bytes": size,
            },
            {
                "save": "durable torch.save (file fsync + directory fsync)",
                "min_s": min(durable),
                "median_s": statistics.median(durable),
                "max_s": max(durable),
                "bytes": (work / "plain.pt").stat().st_size,
            },
        ]
    )


def _worker_pid(agent: int, rank: int) -> int | None:
    """The pid of torchrun's worker ``rank`` (a child of the agent whose environment says RANK=rank)."""
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            env = (d / "environ").read_bytes().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if ppid == agent and f"RANK={rank}".encode() in env:
            return int(d.name)
    return None


def _torchrun(run_dir: Path, *launcher_flags: str) -> list[str]:
    """``torchrun --standalone`` of the reference trainer at world 2 into ``run_dir`` (its flags follow)."""
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
            *launcher_flags, "-m", "fttrainer.train", "--run-dir", str(run_dir)]


def recovery_once(run_dir: Path, kill_after: int, ckpt_every: int) -> dict[str, float]:
    """World 2 under torchrun --max-restarts 3; once rank 0 logged step ``kill_after``, SIGKILL rank 1's
    worker from here and time from that kill to the first step the restarted job logs, by part."""
    from course_dist.labkit.homework import stop_tree, wait_for_step

    run_dir.mkdir()
    cmd = _torchrun(run_dir, "--max-restarts=3", "--monitor-interval=0.5") + [
        "--ckpt-every",
        str(ckpt_every),
        "--max-steps",
        str(kill_after + 10),
        "--epochs",
        "100",
        "--log-every",
        "0",
    ]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join([str(REF), str(ROOT)]))
    tmp = _scratch.child_tmp(env)  # torchrun's own folder goes there; stop_tree removes it
    with open(run_dir.parent / f"{run_dir.name}.log", "w") as out:
        p = subprocess.Popen(
            cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, cwd=run_dir.parent
        )
        p.tmpdir = tmp  # type: ignore[attr-defined]
        try:
            if not wait_for_step(run_dir, kill_after, timeout=300, p=p):
                raise RuntimeError((run_dir.parent / f"{run_dir.name}.log").read_text()[-2000:])
            pid = _worker_pid(p.pid, 1)
            if pid is None:
                raise RuntimeError(f"no worker with RANK=1 under torchrun agent {p.pid}")
            t_kill = time.time()
            os.kill(pid, 9)
            rc = p.wait(timeout=300)
        finally:
            stop_tree(p)
    if rc != 0:
        raise RuntimeError(
            f"torchrun exited {rc}: {(run_dir.parent / f'{run_dir.name}.log').read_text()[-2000:]}"
        )
    recs = [json.loads(x) for x in (run_dir / "metrics" / "rank-0.jsonl").read_text().splitlines()]
    start1 = next(r for r in recs if r.get("event") == "start" and r.get("attempt") == 1)
    step1 = min(
        (r for r in recs if r.get("event") == "step" and r.get("attempt") == 1), key=lambda r: r["time"]
    )
    last0 = max(r["step"] for r in recs if r.get("event") == "step" and r.get("attempt") == 0)
    b = start1["boot"]
    return {
        "total": step1["time"] - t_kill,
        "restart": b["process"] - t_kill,
        "imports": b["enter"] - b["process"],
        "rendezvous": b["group"] - b["enter"],
        "setup": b["setup"] - b["group"],
        "load": b["loaded"] - b["setup"],
        "first_step": step1["time"] - b["loaded"],
        "steps_redone": float(last0 - (step1["step"] - 1)),
        "last_step_before_kill": float(last0),
    }


def recovery(work: Path, quick: bool) -> dict[str, Any]:
    """``recovery_once`` over >= 5 runs (the kill lands at another point of the checkpoint interval each
    time), then the SIGTERM drill."""
    runs = [
        recovery_once(work / f"kill{i}", kill_after=12 + i, ckpt_every=10) for i in range(3 if quick else 5)
    ]
    # SIGTERM: the whole job, as SLURM at a time limit; the checkpoint of the default model must fit the grace
    term = work / "term"
    term.mkdir()
    _torchrun_sigterm(term, ["--ckpt-every", "0", "--epochs", "100", "--log-every", "0"])
    ck = load_metrics(term, event="checkpoint")
    return {"runs": pd.DataFrame(runs), "sigterm_save_s": float(ck["seconds"].max())}


def _torchrun_sigterm(run_dir: Path, args: list[str]) -> None:
    """A world-2 job SIGTERMed (whole session) after its 5th step; returns when it exited."""
    import signal

    from course_dist.labkit.homework import stop_tree, wait_for_step

    cmd = _torchrun(run_dir) + [
        *args,
    ]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join([str(REF), str(ROOT)]))
    tmp = _scratch.child_tmp(env)  # torchrun's own folder goes there; stop_tree removes it
    with open(run_dir.parent / "term.log", "w") as out:
        p = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        p.tmpdir = tmp  # type: ignore[attr-defined]
        try:
            assert wait_for_step(run_dir, 5, timeout=300, p=p), (run_dir.parent / "term.log").read_text()[
                -2000:
            ]
            os.killpg(p.pid, signal.SIGTERM)
            p.wait(timeout=60)
        finally:
            stop_tree(p)


def _md(df: pd.DataFrame) -> str:
    """A markdown table without the optional `tabulate` dependency."""

    def cell(v: object) -> str:
        return f"{v:.4g}" if isinstance(v, float) else str(v)

    rows = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    rows += ["| " + " | ".join(cell(v) for v in r) + " |" for r in df.itertuples(index=False)]
    return "\n".join(rows)


def main(quick: bool = False) -> Path:
    logging.basicConfig(level=logging.INFO, format="[bench.homework] %(message)s")
    t0, load0 = time.perf_counter(), os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-homework-") as tmp:
        work = Path(tmp)
        sc = scaling(work, quick)
        log.info("\n%s", sc.to_string(index=False))
        ck = checkpoint_cost(work, quick)
        rec = recovery(work, quick)
    runs = rec["runs"]
    good2 = sc[(sc.workload.str.startswith("default")) & (sc.world == 2)].iloc[0]
    bad2 = sc[(sc.workload.str.startswith("comm-bound")) & (sc.world == 2)].iloc[0]
    step_s_w1 = float(sc[(sc.workload.str.startswith("default")) & (sc.world == 1)]["step_s"].iloc[0])
    interval = fttrainer.TrainConfig().ckpt_every
    save_s = float(ck["median_s"].iloc[0])
    overhead = save_s / (interval * step_s_w1 + save_s)
    ratio = float(ck["median_s"].iloc[1]) / save_s
    parts = runs.drop(columns=["last_step_before_kill"]).agg(["min", "median", "max"]).T
    negative = [k for k in parts.index if parts.loc[k, "min"] < 0]
    lines = [
        "# Homework trainer benchmark",
        "",
        f"Measured {machine()}; load average {load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the "
        f"end; `bench/bench_homework.py` ({'quick smoke run' if quick else 'full run'}, "
        f"{time.perf_counter() - t0:.0f} s). 2 cores, gloo, one thread per rank: CPU figures of this "
        "machine, not GPU facts.",
        "",
        "## Weak scaling (same work per rank)",
        "",
        _md(sc),
        "",
        f"- world-2 efficiency (median of {int(good2.rounds)} interleaved rounds), default workload: "
        f"**{good2.efficiency:.2f}** (min-max {good2.efficiency_range}; target >= 0.8: "
        f"**{'met' if good2.efficiency >= 0.8 else 'MISS'}**); communication-bound workload: "
        f"**{bad2.efficiency:.2f}** (min-max {bad2.efficiency_range}; target < 0.6: "
        f"**{'met' if bad2.efficiency < 0.6 else 'MISS'}**).",
        "",
        "## Checkpoint cost (the trainer's default model, AdamW; interleaved)",
        "",
        _md(ck),
        "",
        f"- durable torch.save / atomic save (medians): **{ratio:.2f}x** (the fair baseline fsyncs too; "
        "`bench/results/checkpoint.md` has the size sweep and DCP); overhead at the default interval "
        f"({interval} steps of {step_s_w1:.3f} s at world 1): **{overhead:.1%}** (target < 5%: "
        f"**{'met' if overhead < 0.05 else 'MISS'}**).",
        "",
        f"## Recovery: SIGKILL of rank 1 -> first resumed step ({len(runs)} runs, checkpoint every 10 steps)",
        "",
        "World 2 under `torchrun --max-restarts 3 --monitor-interval 0.5`; the benchmark SIGKILLs rank 1's "
        "worker once rank 0 has logged step 12, 13, ... (one step later each run, so the kill lands at "
        "another point of the interval) and times from that kill: `restart` = kill -> the new worker "
        "process exists (torchrun notices, stops rank 0, starts both), `imports` -> the trainer's entry, "
        "`rendezvous` -> the group, `setup` -> data, model, DDP, `load` -> checkpoint chosen, read, "
        "restored, `first_step` -> the first resumed step logged. Process start times from `/proc` "
        "(10 ms ticks).",
        "",
        _md(parts.reset_index().rename(columns={"index": "part (s)"})),
        "",
        f"- SIGKILL -> first resumed step: **{parts.loc['total', 'median']:.1f} s** median (min-max "
        f"{parts.loc['total', 'min']:.1f}-{parts.loc['total', 'max']:.1f} s over {len(runs)} runs); "
        f"steps redone {int(parts.loc['steps_redone', 'min'])}-{int(parts.loc['steps_redone', 'max'])} "
        f"(at most one interval of 10: **{'met' if parts.loc['steps_redone', 'max'] <= 10 else 'MISS'}**); "
        f"negative components: **{', '.join(negative) if negative else 'none'}**.",
        "",
        f"- SIGTERM to the whole job (world 2, default model): its checkpoint took "
        f"**{rec['sigterm_save_s']:.2f} s**, against torchrun's SIGTERM -> SIGKILL grace of 30 s "
        "(`--shutdown-timeout`) and SLURM's default KillWait of 30 s.",
        "",
    ]
    path = write("homework", "\n".join(lines))
    log.info("wrote %s", path)
    return path


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
