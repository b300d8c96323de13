"""Lab 05 pictures: simulated scaling efficiency, and the step-time tail against a collective timeout."""

from __future__ import annotations

from typing import Any

import pandas as pd


def plot_scaling_sim(table: pd.DataFrame) -> Any:
    """Efficiency against world size, one line per mode (table: mode, world, efficiency, source)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.2))
    for (mode, source), g in table.groupby(["mode", "source"]):
        ax.plot(g["world"], g["efficiency"], marker="o", ls="-" if source == "simulated" else "--",
                label=f"{mode} ({source})")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("ranks")
    ax.set_ylabel("scaling efficiency")
    ax.set_ylim(0, 1.1)
    ax.axhline(0.5, color="grey", lw=0.8)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_step_tail(step_s: list[float], timeout: float) -> Any:
    """Histogram of measured synchronized step times and the chosen collective timeout."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 2.8))
    ax.hist(step_s, bins=20, color="tab:blue", alpha=0.7, label="measured step times")
    ax.axvline(max(step_s), color="tab:orange", label=f"max {max(step_s) * 1e3:.1f} ms")
    ax.axvline(timeout, color="tab:red", label=f"timeout {timeout * 1e3:.1f} ms")
    ax.set_xlabel("seconds")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
