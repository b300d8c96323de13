# mutant: stragglers_round_shares
# exercise: stragglers
# replaces: stragglers_solution
# why: rounds each ideal share independently: the sizes need not sum to the global batch
def slowest_rank(spans: pd.DataFrame) -> int:
    """The rank with the largest median per-step compute seconds."""
    ### BEGIN SOLUTION
    compute = spans[spans["kind"] == "compute"].groupby("rank")["seconds"].median()
    return int(compute.idxmax())
    ### END SOLUTION


def rebalance(sec_per_sample: list[float], global_batch: int) -> list[int]:
    """Per-rank sample counts proportional to speed, each >= 1, summing to ``global_batch``."""
    ### BEGIN SOLUTION
    speed = [1.0 / t for t in sec_per_sample]
    share = [global_batch * s / sum(speed) for s in speed]
    sizes = [round(x) for x in share]
    for r in range(len(sizes)):  # every rank keeps at least one sample: take it from the largest
        if sizes[r] == 0:
            sizes[r] = 1
            sizes[max(range(len(sizes)), key=lambda q: sizes[q])] -= 1
    return sizes
    ### END SOLUTION


def loss_weight(b_r: int, global_batch: int, world: int) -> float:
    """Factor on rank r's mean loss so that the all-reduced average gradient is the global-batch one."""
    ### BEGIN SOLUTION
    return world * b_r / global_batch  # mean_r * b_r / B summed over ranks = global mean; DDP divides by R
    ### END SOLUTION
