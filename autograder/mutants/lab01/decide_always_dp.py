# mutant: decide_always_dp
# exercise: decide
# replaces: decide_solution
# why: always takes the widest feasible data-parallel configuration
def decide(candidates: pd.DataFrame, *, mem_budget: float, global_batch: int, micro_batch: int,
           gpus_per_node: int, max_ranks: int, tolerance: float = 0.05) -> dict:
    """The chosen candidate (a row of ``candidates`` as a dict), by the three rules above."""
    ### BEGIN SOLUTION
    c = candidates
    ok = c[(c["mem_bytes"] <= mem_budget) & (c["tp"] <= gpus_per_node)
           & (c["dp"] * micro_batch <= global_batch) & (c["ranks"] <= max_ranks)]
    if ok.empty:
        raise ValueError(f"no candidate fits: mem_budget {mem_budget:.4g} B per rank, smallest on offer "
                         f"{c['mem_bytes'].min():.4g} B (or every one breaks the node, batch or rank limits)")
    return ok.sort_values(["dp", "step_s"], ascending=[False, True], kind="stable").iloc[0].to_dict()
    ### END SOLUTION
