# mutant: stragglers_total_time
# exercise: stragglers
# replaces: stragglers_solution
# why: names the straggler by total step time, which the all-reduce makes equal on every rank
def slowest_rank(spans: pd.DataFrame) -> int:
    """The rank with the largest median per-step compute seconds."""
    ### BEGIN SOLUTION
    total = spans.groupby(["rank", "step"])["seconds"].sum().groupby("rank").median()
    return int(total.idxmax())
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
    return world * b_r / global_batch  # mean_r * b_r / B summed over ranks = global mean; DDP divides by R
    ### END SOLUTION
