# mutant: decide_timeout_median
# exercise: decide
# replaces: decide_solution
# why: timeout from the typical (median) step, not the tail: healthy slow steps trip it
def choose(cands: pd.DataFrame, deadline_s: float) -> dict:
    """Cheapest (world, global batch) that reaches the target within ``deadline_s``."""
    ### BEGIN SOLUTION
    ok = cands[cands["time_s"] <= deadline_s]
    if ok.empty:
        raise ValueError(f"no configuration reaches the target within {deadline_s} s: the fastest takes "
                         f"{cands['time_s'].min():.1f} s")
    return ok.sort_values(["cost", "world"], kind="stable").iloc[0].to_dict()
    ### END SOLUTION


def collective_timeout(step_s: list[float], margin: float = 3.0) -> float:
    """``margin`` x the largest measured step time."""
    ### BEGIN SOLUTION
    return margin * sorted(step_s)[len(step_s) // 2]
    ### END SOLUTION
