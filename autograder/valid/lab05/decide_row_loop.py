# valid: decide_row_loop
# exercise: decide
# replaces: decide_solution
# why: choose as a loop over records and one min() with the key (cost, world); the timeout over all waits
#      chained into one list; the heartbeat from the sorted steps: the same rules, boundary and ties
def choose(cands: pd.DataFrame, deadline_s: float) -> dict:
    """Cheapest (world, global batch) that reaches the target within ``deadline_s``."""
    rows = cands.to_dict("records")
    in_time = [row for row in rows if not row["time_s"] > deadline_s]
    if not in_time:
        fastest = min(row["time_s"] for row in rows)
        raise ValueError(f"deadline {deadline_s} s cannot be met: fastest configuration {fastest} s")
    return min(in_time, key=lambda row: (row["cost"], row["world"]))


def collective_timeout(phase_s: dict[str, list[float]], margin: float = 3.0) -> float:
    """``margin`` x the longest measured wait of any phase (step, warm-up, checkpoint, eval, ...)."""
    import itertools

    return max(itertools.chain.from_iterable(phase_s.values())) * margin


def heartbeat_deadline(step_s: list[float], margin: float = 3.0) -> float:
    """``margin`` x the largest measured step time: no finished step for this long (outside an announced
    checkpoint or eval) is a hang."""
    return sorted(step_s)[-1] * margin
