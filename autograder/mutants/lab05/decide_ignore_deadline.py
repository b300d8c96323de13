# mutant: decide_ignore_deadline
# exercise: decide
# replaces: decide_solution
# why: the cheapest configuration overall, ignoring the deadline
def choose(cands: pd.DataFrame, deadline_s: float) -> dict:
    """Cheapest (world, global batch) that reaches the target within ``deadline_s``."""
    ### BEGIN SOLUTION
    ok = cands
    if (cands["time_s"] > deadline_s).all():
        raise ValueError(f"no configuration reaches the target within {deadline_s} s: the fastest takes "
                         f"{cands['time_s'].min():.1f} s")
    return ok.sort_values(["cost", "world"], kind="stable").iloc[0].to_dict()
    ### END SOLUTION


def collective_timeout(step_s: list[float], margin: float = 3.0) -> float:
    """``margin`` x the largest measured step time."""
    ### BEGIN SOLUTION
    return margin * max(step_s)
    ### END SOLUTION
