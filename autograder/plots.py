"""What the instructor reads at the end of a grading run: a summary table per lab and a score plot per lab.

- ``<csv stem>.summary.md`` beside the CSV: per lab, students graded, mean/median score, status counts, and a
  histogram per exercise (how many students earned 0, some, half or more, all of its points);
- ``scores_<lab>.png`` beside the CSV: the distribution of total scores and the mean share per exercise;
- ``build/scores.png`` (``make course``): per lab, each sample's points per exercise as stacked bars.

An exercise's CSV column holds its auto points plus the hand-given points of its written answers once they are
graded (``manual`` + ``export``): the tables name both maxima apart ("auto points", "written points") and
every share is of their sum, so a graded written answer never reads as more than the exercise's points.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from autograder.config import CourseConfig
from autograder.merge import BASE_COLUMNS, TAIL_COLUMNS

log = logging.getLogger("autograder.summary")
BINS = ("0", "<50%", "50-99%", "100%")


def _exercise_max(cfg: CourseConfig, lab: str) -> dict[str, tuple[float, float]]:
    """exercise id -> (its auto points, its written (hand-graded) points), from the rubric."""
    from autograder.rubrics import load_rubric

    path = cfg.rubric / f"{lab}.yaml"
    if not path.exists():
        return {}
    return {
        ex.id: (
            sum(c.points for c in ex.graded_cells if c.kind == "auto"),
            sum(c.points for c in ex.graded_cells if c.kind != "auto"),
        )
        for ex in load_rubric(path).exercises
        if ex.graded_cells
    }


def lab_summary(cfg: CourseConfig, df: pd.DataFrame, lab: str) -> tuple[str, pd.DataFrame]:
    """(headline, per-exercise histogram table) of one lab's rows."""
    sub = df[df["lab"] == lab]
    score = pd.to_numeric(sub["score"], errors="coerce").fillna(0.0)
    statuses = ", ".join(f"{k} {v}" for k, v in sub["status"].value_counts().sort_index().items())
    top = pd.to_numeric(sub["max_score"], errors="coerce").max()
    head = (
        f"{lab}: {len(sub)} submissions ({statuses}); score mean {score.mean():.1f}, "
        f"median {score.median():.1f}, max {score.max():.1f} of {top:g}"
    )
    rows = []
    for ex, (auto, written) in _exercise_max(cfg, lab).items():
        full = auto + written
        if ex not in sub.columns or full <= 0:
            continue
        frac = pd.to_numeric(sub[ex], errors="coerce").fillna(0.0) / full
        rows.append(
            {
                "exercise": ex,
                "auto points": auto,
                "written points": written,
                "mean": round(float(frac.mean() * full), 2),
                BINS[0]: int((frac <= 0).sum()),
                BINS[1]: int(((frac > 0) & (frac < 0.5)).sum()),
                BINS[2]: int(((frac >= 0.5) & (frac < 1)).sum()),
                BINS[3]: int((frac >= 1).sum()),
            }
        )
    return head, pd.DataFrame(rows)


def markdown_table(df: pd.DataFrame) -> str:
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += [
        "| " + " | ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in r) + " |" for r in df.values
    ]
    return "\n".join(lines)


def lab_figure(cfg: CourseConfig, df: pd.DataFrame, lab: str):  # noqa: ANN201 - a matplotlib Figure
    """The per-lab figure: the distribution of total scores, and the mean share of each exercise's points."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    sub = df[df["lab"] == lab]
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 3.6))
    scores = pd.to_numeric(sub["score"], errors="coerce").fillna(0.0)
    top = max(100, int(scores.max()) if len(scores) else 0)  # extra credit lands above 100: keep it plotted
    a.hist(scores, bins=range(0, top + 5, 5), color="tab:blue")
    a.set(title=f"{lab}: total score ({len(sub)} submissions)", xlabel="points", ylabel="students")
    a.yaxis.set_major_locator(MaxNLocator(integer=True))  # a count of students: no 0.5 ticks on small classes
    _, table = lab_summary(cfg, df, lab)
    if len(table):
        share = table["mean"] / (table["auto points"] + table["written points"])
        b.barh(table["exercise"], share, color="tab:green")
        b.set_xlim(0, 1)
        b.invert_yaxis()
    b.set(title="mean share of each exercise's points (auto + hand-given)", xlabel="share")
    fig.tight_layout()
    return fig


def plot_lab(cfg: CourseConfig, df: pd.DataFrame, lab: str, out: Path) -> Path:
    import matplotlib.pyplot as plt

    fig = lab_figure(cfg, df, lab)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def summarize(
    cfg: CourseConfig, df: pd.DataFrame, csv: Path, *, progress: bool = True, plots: bool = True
) -> Path:
    """Write the summary table (and a plot per lab) beside ``csv``; log it. Returns the summary file."""
    parts = []
    for lab in sorted(set(df["lab"])):
        head, table = lab_summary(cfg, df, lab)
        note = ""
        if len(table) and table["written points"].sum() > 0:
            note = (
                "\n\nEach exercise's mean and histogram count its auto points and the hand-given points of "
                "its written answers (0 until graded: `manual`, then `export`)."
            )
        parts.append(
            f"## {head}\n\n" + (markdown_table(table) if len(table) else "(no rubric)") + note + "\n"
        )
        if plots and lab in cfg.lab_ids():
            plot_lab(cfg, df, lab, csv.with_name(f"scores_{lab}.png"))
    text = "# Grading summary\n\n" + "\n".join(parts)
    path = csv.with_name(csv.stem + ".summary.md")
    path.write_text(text, encoding="utf-8")
    if progress:
        log.info("summary (%s):\n%s", path, text)
    return path


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
        ax.set_xlim(0, float(pd.to_numeric(sub["max_score"], errors="coerce").max() or 100) + 8)
        ax.invert_yaxis()
        ax.set_title(f"{lab}: points per sample (auto; written answers once hand-graded)")
        ax.set_xlabel("points")
        ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=7)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
