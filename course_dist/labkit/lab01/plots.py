"""Lab 01's pictures: the alpha-beta fit against the measurements, and predicted DDP scaling."""

from __future__ import annotations

from typing import Any

import pandas as pd


def plot_alpha_beta(meas: pd.DataFrame, pred_col: str = "predicted_s", ax: Any = None) -> Any:
    """Measured time vs bytes per collective (log-log dots) with the fitted model's line."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    for name, g in meas.groupby("collective"):
        g = g.sort_values("bytes")
        (line,) = ax.plot(g["bytes"], g[pred_col], "-", label=f"{name} (fit)")
        ax.plot(g["bytes"], g["time_s"], "o", color=line.get_color(), ms=4)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("message bytes S")
    ax.set_ylabel("seconds")
    ax.set_title("collectives: measured (dots) vs alpha-beta fit (lines)")
    ax.legend(fontsize="small")
    return ax


def plot_scaling_prediction(
    df: pd.DataFrame,
    ax: Any = None,
    title: str = "SIMULATED DDP scaling: cost model calibrated by a world-2 gloo fit on this CPU machine",
) -> Any:
    """Simulated samples/s against world size (columns world, samples_per_s, and optionally a label). Not a
    measurement: the title says what calibrated it."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    for label, g in df.groupby("label") if "label" in df else [("", df)]:
        ax.plot(g["world"], g["samples_per_s"], "o-", label=str(label))
    ax.set_xlabel("ranks")
    ax.set_ylabel("samples / s (simulated)")
    ax.set_title(title, fontsize="small")
    if "label" in df:
        ax.legend(fontsize="small")
    return ax
