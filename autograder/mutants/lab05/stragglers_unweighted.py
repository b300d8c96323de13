# mutant: stragglers_unweighted
# exercise: stragglers
# replaces: stragglers_solution
# why: rebalanced ranks average their mean losses without weights: small shards count as much as big ones
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
    sizes = [math.floor(x) for x in share]
    by_remainder = sorted(range(len(share)), key=lambda r: (-(share[r] - sizes[r]), r))
    for r in by_remainder[: global_batch - sum(sizes)]:
        sizes[r] += 1
    for r in range(len(sizes)):  # every rank keeps at least one sample: take it from the largest
        if sizes[r] == 0:
            sizes[r] = 1
            sizes[max(range(len(sizes)), key=lambda q: sizes[q])] -= 1
    return sizes
    ### END SOLUTION


def loss_weight(b_r: int, global_batch: int, world: int) -> float:
    """Factor on rank r's mean loss so that the all-reduced average gradient is the global-batch one."""
    ### BEGIN SOLUTION
    return 1.0
    ### END SOLUTION
