"""Per-rank metrics (JSONL + CSV) and the straggler report.

Each rank appends one row per step to ``<run_dir>/metrics/rank-<r>.jsonl`` and ``.csv``: step time split into
local compute, the wait for the slowest rank (``wait_s``, measured in the pre-sync probe all-reduce) and the
synchronised micro-batch (``sync_s``: last backward with the overlapped gradient all-reduce), samples/s and
loss. The JSONL's first record of every attempt is a ``start`` event with the config and the dataset metadata.
"""

from __future__ import annotations

import csv
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

import pandas as pd

log = logging.getLogger(__name__)

STEP_FIELDS = [
    "step",
    "epoch",
    "rank",
    "world_size",
    "attempt",
    "loss",
    "lr",
    "step_s",
    "compute_s",
    "wait_s",
    "sync_s",
    "samples",
    "samples_per_s",
    "dataset_version",
    "time",
]


class MetricsLogger:
    """Appends this rank's rows to JSONL and CSV (append mode: restarts continue the same files)."""

    def __init__(self, run_dir: str | Path, rank: int) -> None:
        self.dir = Path(run_dir) / "metrics"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.rank = rank
        self.jsonl = open(self.dir / f"rank-{rank}.jsonl", "a", buffering=1)
        csv_path = self.dir / f"rank-{rank}.csv"
        new = not csv_path.exists() or csv_path.stat().st_size == 0
        self._csv_file = open(csv_path, "a", newline="", buffering=1)
        self.csv = csv.DictWriter(self._csv_file, fieldnames=STEP_FIELDS)
        if new:
            self.csv.writeheader()

    def event(self, kind: str, **fields: Any) -> None:
        self.jsonl.write(json.dumps({"event": kind, "rank": self.rank, **fields}) + "\n")

    def step(self, row: dict[str, Any]) -> None:
        missing = set(STEP_FIELDS) - set(row)
        if missing:
            raise ValueError(f"metrics row lacks {sorted(missing)}")
        self.jsonl.write(json.dumps({"event": "step", **row}) + "\n")
        self.csv.writerow({k: row[k] for k in STEP_FIELDS})

    def close(self) -> None:
        self.jsonl.close()
        self._csv_file.close()


def process_start_time() -> float | None:
    """Wall-clock time this process was created (Linux ``/proc``; None elsewhere): the start of a restart's
    import phase in the recovery breakdown. The kernel counts a process's start in clock ticks since boot;
    converted through ``CLOCK_BOOTTIME`` now (``/proc/stat``'s ``btime`` is rounded to whole seconds, which
    put the start up to a second early and made the restart phase negative)."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
        return time.time() - age
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def load_metrics(run_dir: str | Path, event: str = "step") -> pd.DataFrame:
    """All ranks' records of one event kind (``step`` rows by default) as one DataFrame."""
    rows = []
    for path in sorted((Path(run_dir) / "metrics").glob("rank-*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                rec = json.loads(line)
                if rec.get("event") == event:
                    rows.append(rec)
    return pd.DataFrame(rows)


def straggler_report(steps: pd.DataFrame, skip: int = 1) -> dict[str, Any]:
    """Name the slowest rank and how long the others waited for it.

    ``steps``: step rows of every rank (:func:`load_metrics`); the first ``skip`` steps of each attempt
    (warm-up, DDP bucket rebuild) are left out. The slowest rank is the one with the largest mean local time
    per step (``step_s - wait_s - sync_s``); ``waited_s`` is the total time the *other* ranks spent in the
    wait probe. Returns ``{"slowest_rank", "waited_s", "per_rank" (DataFrame), "text"}``.
    """
    if steps.empty:
        raise ValueError("no step rows: did the run write metrics?")
    df = steps.sort_values(["attempt", "rank", "step"])
    df = df[df.groupby(["attempt", "rank"]).cumcount() >= skip]
    df = df.assign(local_s=df["step_s"] - df["wait_s"] - df["sync_s"])
    per_rank = (
        df.groupby("rank")
        .agg(
            steps=("step", "count"),
            local_s=("local_s", "mean"),
            wait_s=("wait_s", "sum"),
            step_s=("step_s", "mean"),
        )
        .reset_index()
    )
    slowest = int(per_rank.loc[per_rank["local_s"].idxmax(), "rank"])
    waited = float(per_rank.loc[per_rank["rank"] != slowest, "wait_s"].sum())
    text = (
        f"slowest rank: {slowest} (mean local time {per_rank['local_s'].max() * 1e3:.1f} ms/step vs median "
        f"{per_rank['local_s'].median() * 1e3:.1f} ms); the other ranks waited {waited:.2f} s in total for it"
    )
    return {"slowest_rank": slowest, "waited_s": waited, "per_rank": per_rank, "text": text}
