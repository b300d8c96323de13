# mutant: straggler_by_wait
# exercise: metrics
# replaces: fttrainer/metrics.py (package module: body appended; re-binds straggler_report)
# why: names the rank that waited longest - the one that is *not* the straggler: the fast ranks wait


def straggler_report(steps, skip=1):
    if steps.empty:
        raise ValueError("no step rows: did the run write metrics?")
    df = steps.sort_values(["attempt", "rank", "step"])
    df = df[df.groupby(["attempt", "rank"]).cumcount() >= skip]
    per_rank = df.groupby("rank").agg(steps=("step", "count"), wait_s=("wait_s", "sum")).reset_index()
    slowest = int(per_rank.loc[per_rank["wait_s"].idxmax(), "rank"])
    waited = float(per_rank.loc[per_rank["rank"] != slowest, "wait_s"].sum())
    text = f"slowest rank: {slowest}; the others waited {waited:.2f} s"
    return {"slowest_rank": slowest, "waited_s": waited, "per_rank": per_rank, "text": text}
