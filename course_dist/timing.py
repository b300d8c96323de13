"""Per-rank step timer that splits compute from communication wait, and gathering it from every rank.

    t = StepTimer()
    for i in range(steps):
        with t.compute():
            loss = model(x).sum(); loss.backward()
        with t.comm():
            for p in model.parameters(): dist.all_reduce(p.grad)
        t.end_step()
    df = gather_frames(t.frame())      # every rank's spans, on every rank
    plot_timeline(df)

Why "comm" is *wait*, not transfer: a blocking collective returns when the slowest rank arrived, so a
straggler shows up as communication time on everyone else. On CUDA the timer synchronizes the device at span
boundaries (``sync=True``), or kernel launches would be timed instead of kernels.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pandas as pd

from course_dist.context import rank as _rank

SPAN_COLUMNS = ["rank", "step", "kind", "start", "end", "seconds"]


class StepTimer:
    """Record (step, kind, start, end) spans for this rank; ``kind`` is "compute", "comm" or any label."""

    def __init__(self, rank: int | None = None, sync: bool = True) -> None:
        self.rank = _rank() if rank is None else rank
        self.sync = sync
        self.step = 0
        self.spans: list[tuple[int, str, float, float]] = []
        self._step_start = time.time()
        self.steps: list[tuple[int, float, float]] = []  # (step, start, end)

    def _sync(self) -> None:
        if self.sync:
            import sys

            torch = sys.modules.get("torch")
            if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
                torch.cuda.synchronize()

    @contextmanager
    def span(self, kind: str) -> Iterator[None]:
        self._sync()
        start = time.time()
        try:
            yield
        finally:
            self._sync()
            self.spans.append((self.step, kind, start, time.time()))

    def compute(self) -> Any:
        """Context manager timing local work (forward, backward, optimizer)."""
        return self.span("compute")

    def comm(self) -> Any:
        """Context manager timing a blocking collective (time waiting for the slowest rank included)."""
        return self.span("comm")

    def end_step(self) -> None:
        """Close the current step (time not inside a span counts as "other")."""
        now = time.time()
        self.steps.append((self.step, self._step_start, now))
        self.step += 1
        self._step_start = now

    def frame(self) -> pd.DataFrame:
        """One row per span: rank, step, kind, start, end, seconds (wall-clock seconds since the epoch)."""
        df = pd.DataFrame([(self.rank, s, k, a, b, b - a) for s, k, a, b in self.spans], columns=SPAN_COLUMNS)
        return df

    def summary(self) -> pd.DataFrame:
        """One row per closed step: compute, comm and other seconds, and the step total."""
        df = self.frame()
        per = df.pivot_table(index="step", columns="kind", values="seconds", aggfunc="sum", fill_value=0.0)
        rows = []
        for step, start, end in self.steps:
            compute = float(per.loc[step, "compute"]) if step in per.index and "compute" in per else 0.0
            comm = float(per.loc[step, "comm"]) if step in per.index and "comm" in per else 0.0
            total = end - start
            rows.append(
                {
                    "rank": self.rank,
                    "step": step,
                    "compute": compute,
                    "comm": comm,
                    "other": max(total - compute - comm, 0.0),
                    "total": total,
                }
            )
        return pd.DataFrame(rows, columns=["rank", "step", "compute", "comm", "other", "total"])


def gather_frames(df: pd.DataFrame, group: Any = None) -> pd.DataFrame:
    """Concatenate every rank's DataFrame on every rank (``all_gather_object``); unchanged outside a group."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return df.reset_index(drop=True)
    parts: list[Any] = [None] * dist.get_world_size(group)
    dist.all_gather_object(parts, df, group=group)
    return pd.concat(parts, ignore_index=True)
