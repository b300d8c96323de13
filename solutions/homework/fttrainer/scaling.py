"""Scaling experiment: the same per-rank work at world 1, 2, 4 -> throughput, efficiency and cost per sample.

Weak scaling (the default) keeps each rank's share fixed - ``global_batch = per_rank_batch x world`` - which
is what data parallelism buys: more samples per second at the same per-sample cost if communication hides
behind compute. Strong scaling keeps the global batch fixed and splits it thinner. Each world size is a real
``torchrun --standalone`` job (a free port every time) of ``python -m <package>.train``; the step time of a
step is the slowest rank's, the median is taken after ``skip`` warm-up steps.

    python -m fttrainer.scaling --out runs/scaling            # world 1, 2, 4 on the default workload
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

from .metrics import load_metrics

log = logging.getLogger(__name__)


def _run(package: str, world: int, args: list[str], run_dir: Path, timeout: float) -> None:
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={world}",
        "-m",
        f"{package}.train",
        "--run-dir",
        str(run_dir),
        *args,
    ]
    # a temp dir of its own, removed below: a SIGKILLed torchrun agent leaves its torchelastic_* folder there
    tmp = tempfile.mkdtemp(prefix="scaling-tmp-")
    env = dict(os.environ, OMP_NUM_THREADS="1", TMPDIR=tmp)
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    with open(run_dir.parent / f"log-world{world}.txt", "w") as out:
        p = subprocess.Popen(
            cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, cwd=run_dir.parent
        )
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            rc = None
        finally:
            try:  # the agent and every worker: nothing outlives the measurement
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
            shutil.rmtree(tmp, ignore_errors=True)
    if rc != 0:
        tail = (run_dir.parent / f"log-world{world}.txt").read_text()[-3000:]
        raise RuntimeError(f"world {world} run failed (exit {rc}, timeout {timeout} s):\n{tail}")


def run_scaling(
    out_dir: str | Path,
    worlds: tuple[int, ...] = (1, 2, 4),
    per_rank_batch: int = 512,
    micro_batch: int = 128,
    steps: int = 30,
    skip: int = 5,
    mode: str = "weak",
    extra_args: tuple[str, ...] = (),
    price_per_rank_hour: float = 0.05,
    timeout: float = 600.0,
) -> pd.DataFrame:
    """Run every world size, write ``scaling.csv``, ``scaling.md`` and ``scaling.png`` into ``out_dir``.

    Columns: world, global_batch, step_s (median slowest-rank step), samples_per_s, efficiency (weak: thr_w /
    (w x thr_1); strong: the same ratio, the ideal being linear speed-up), wait_s (median time a rank waited
    for others), cost_per_sample (rank-seconds per sample), usd_per_1m_samples (at ``price_per_rank_hour``).
    """
    if mode not in ("weak", "strong"):
        raise ValueError(f"mode must be weak or strong, got {mode!r}")
    if 1 not in worlds:
        raise ValueError(f"worlds must include 1 (the baseline), got {worlds}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    package = __name__.rsplit(".", 1)[0]
    rows = []
    for w in worlds:
        gb = per_rank_batch * w if mode == "weak" else per_rank_batch
        run_dir = Path(tempfile.mkdtemp(prefix=f"world{w}-", dir=out))
        args = [
            "--global-batch",
            str(gb),
            "--micro-batch",
            str(micro_batch),
            "--max-steps",
            str(steps),
            "--epochs",
            "1000",
            "--data-size",
            str(gb * max(steps, 8)),
            "--ckpt-every",
            "0",
            "--log-every",
            "0",
            *extra_args,
        ]
        log.info("world %d: global batch %d", w, gb)
        _run(package, w, args, run_dir, timeout)
        m = load_metrics(run_dir)
        m = m[m["step"] > skip]
        per_step = m.groupby("step").agg(step_s=("step_s", "max"), wait_s=("wait_s", "median"))
        step_s = float(per_step["step_s"].median())
        rows.append(
            {
                "world": w,
                "global_batch": gb,
                "step_s": step_s,
                "samples_per_s": gb / step_s,
                "wait_s": float(per_step["wait_s"].median()),
            }
        )
    df = pd.DataFrame(rows)
    base = float(df.loc[df["world"] == 1, "samples_per_s"].iloc[0])
    df["efficiency"] = df["samples_per_s"] / (df["world"] * base)
    df["cost_per_sample"] = df["world"] / df["samples_per_s"]
    df["usd_per_1m_samples"] = df["cost_per_sample"] * 1e6 * price_per_rank_hour / 3600
    df.to_csv(out / "scaling.csv", index=False)
    (out / "scaling.md").write_text(
        df.to_markdown(index=False, floatfmt=".4g") if _has_tabulate() else df.to_string(index=False)
    )
    plot_scaling(df, out / "scaling.png")
    return df


def _has_tabulate() -> bool:
    try:
        import tabulate  # noqa: F401
    except ImportError:
        return False
    return True


def plot_scaling(df: pd.DataFrame, path: str | Path) -> Path:
    """Three panels: throughput (with the ideal line), efficiency, cost per sample."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 3, figsize=(12, 3.4))
    base = float(df.loc[df["world"] == 1, "samples_per_s"].iloc[0])
    ax[0].plot(df["world"], df["samples_per_s"], "o-", label="measured")
    ax[0].plot(df["world"], base * df["world"], "--", color="grey", label="ideal")
    ax[0].set(title="throughput", xlabel="ranks", ylabel="samples/s")
    ax[0].legend()
    ax[1].plot(df["world"], df["efficiency"], "o-")
    ax[1].axhline(0.8, ls=":", color="red")
    ax[1].set(title="scaling efficiency", xlabel="ranks", ylim=(0, 1.1))
    ax[2].plot(df["world"], df["cost_per_sample"] * 1e3, "o-")
    ax[2].set(title="cost per sample", xlabel="ranks", ylabel="rank-ms / sample")
    for a in ax:
        a.set_xticks(list(df["world"]))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return Path(path)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="runs/scaling")
    p.add_argument("--worlds", default="1,2,4")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--mode", default="weak", choices=["weak", "strong"])
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="[scaling] %(message)s")
    df = run_scaling(a.out, tuple(int(w) for w in a.worlds.split(",")), steps=a.steps, mode=a.mode)
    log.info("\n%s", df.to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
