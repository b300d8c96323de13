# valid: decide_row_loop
# exercise: decide
# replaces: decide_solution
# why: the rules written as a loop over rows and one min() with a key (ranks, step_s, position) instead of
#      boolean masks and a stable sort: the same feasible set, tolerance and tie order
def decide(candidates: pd.DataFrame, *, mem_budget: float, global_batch: int, micro_batch: int,
           gpus_per_node: int, max_ranks: int, tolerance: float = 0.05) -> dict:
    """The chosen candidate (a row of ``candidates`` as a dict), by the three rules above."""
    feasible = []
    for pos, (_, row) in enumerate(candidates.iterrows()):
        if (row["mem_bytes"] <= mem_budget and row["tp"] <= gpus_per_node
                and row["dp"] * micro_batch <= global_batch and row["ranks"] <= max_ranks):
            feasible.append((pos, row))
    if not feasible:
        raise ValueError(f"nothing fits in mem_budget {mem_budget} B per rank; the smallest candidate needs "
                         f"{candidates['mem_bytes'].min()} B")
    fastest = min(row["step_s"] for _, row in feasible)
    near = [(row["ranks"], row["step_s"], pos, row) for pos, row in feasible
            if row["step_s"] <= (1 + tolerance) * fastest]
    return min(near, key=lambda t: t[:3])[3].to_dict()
