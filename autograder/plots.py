"""The score plot of ``make course`` (build/scores.png): per lab, each sample's points per exercise."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from autograder.grade import BASE_COLUMNS, TAIL_COLUMNS


def plot_scores(df: pd.DataFrame, out: Path, exercise_order: dict[str, list[str]]) -> Path:
    """Stacked horizontal bars: one panel per lab, one bar per sample, one colour per exercise."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labs = sorted(df["lab"].unique())
    heights = [max(2.0, 0.35 * (df["lab"] == lab).sum() + 1) for lab in labs]
    fig, axes = plt.subplots(
        len(labs), 1, figsize=(10, sum(heights)), squeeze=False, gridspec_kw={"height_ratios": heights}
    )
    for ax, lab in zip(axes[:, 0], labs, strict=True):
        sub = df[df["lab"] == lab].set_index("student")
        order = [s for s in ("reference", "blank") if s in sub.index] + sorted(
            s for s in sub.index if s not in ("reference", "blank")
        )
        sub = sub.loc[order]
        exercises = [e for e in exercise_order.get(lab, []) if e in sub.columns] or [
            c
            for c in sub.columns
            if c not in BASE_COLUMNS + TAIL_COLUMNS + ["check"] and sub[c].notna().any()
        ]
        left = pd.Series(0.0, index=sub.index)
        cmap = plt.get_cmap("tab20")
        for i, ex in enumerate(exercises):
            vals = pd.to_numeric(sub[ex], errors="coerce").fillna(0.0)
            ax.barh(sub.index, vals, left=left, color=cmap(i % 20), label=ex)
            left += vals
        if "check" in sub.columns:  # make course: mark the samples that broke an expectation
            for name, total, check in zip(sub.index, left, sub["check"], strict=True):
                if check != "ok":
                    ax.text(
                        total + 1, name, "FAIL", va="center", color="crimson", fontsize=8, fontweight="bold"
                    )
        ax.set_xlim(0, float(sub["max_score"].max() or 100) + 8)
        ax.invert_yaxis()
        ax.set_title(f"{lab}: auto-graded points per sample (manual points pending)")
        ax.set_xlabel("points")
        ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=7)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
