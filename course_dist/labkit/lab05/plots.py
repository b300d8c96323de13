"""Lab 05 pictures: simulated scaling efficiency, and the step-time tail against a collective timeout."""

from __future__ import annotations

import textwrap
from typing import Any

import pandas as pd


def plot_scaling_sim(table: pd.DataFrame, calibration: str = "") -> Any:
    """Efficiency against world size, one line per mode (table: mode, world, efficiency, source); the
    simulated lines are solid, the measured dashed, and the title carries their ``calibration``."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.4))
    if calibration:
        ax.set_title(textwrap.fill(calibration, 90), fontsize=7)
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


def plot_step_tail(phases: dict[str, list[float]], timeout: float, heartbeat: float) -> Any:
    """Measured step times, the longer healthy waits (warm-up, checkpoint, eval), the heartbeat deadline and
    the collective timeout, on one log axis: the timeout clears every wait, the heartbeat only the steps."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 2.8))
    colors = {"step": "tab:blue", "warmup": "tab:green", "checkpoint": "tab:purple", "eval": "tab:brown"}
    for k, (name, values) in enumerate(phases.items()):
        ax.scatter(values, [k] * len(values), s=12, color=colors.get(name, "grey"), label=name)
    ax.axvline(heartbeat, color="tab:orange", label=f"heartbeat deadline {heartbeat:.2f} s")
    ax.axvline(timeout, color="tab:red", label=f"collective timeout {timeout:.2f} s")
    ax.set_xscale("log")
    ax.set_yticks(range(len(phases)), list(phases))
    ax.set_xlabel("seconds a healthy rank waits (world 2, gloo, this machine)")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig
