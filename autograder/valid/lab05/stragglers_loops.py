# valid: stragglers_loops
# exercise: stragglers
# replaces: stragglers_solution
# why: the median per rank from a loop with statistics.median (ties: the lower rank), the remainders
#      ordered by a negated key, the donor found by a scan, the weight as a ratio written the other way:
#      the same sizes, the same tie and donor rules, the same weights
def slowest_rank(spans: pd.DataFrame) -> int:
    """The rank with the largest median per-step compute seconds."""
    import statistics

    per_rank: dict[int, list[float]] = {}
    for r, kind, sec in zip(spans["rank"], spans["kind"], spans["seconds"], strict=True):
        if kind == "compute":
            per_rank.setdefault(int(r), []).append(float(sec))
    medians = {r: statistics.median(v) for r, v in per_rank.items()}
    best = max(medians.values())
    return min(r for r, m in medians.items() if m == best)


def rebalance(sec_per_sample: list[float], global_batch: int) -> list[int]:
    """Per-rank sample counts proportional to speed, each >= 1, summing to ``global_batch``."""
    speed = [1.0 / t for t in sec_per_sample]
    total = sum(speed)
    share = [global_batch * s / total for s in speed]
    sizes = [int(x) for x in share]  # floor: the shares are positive
    left = global_batch - sum(sizes)
    order = sorted(range(len(share)), key=lambda r: (sizes[r] - share[r], r))
    for r in order[:left]:
        sizes[r] += 1
    for r in range(len(sizes)):
        if sizes[r] == 0:
            sizes[r] = 1
            donor = 0
            for q in range(1, len(sizes)):
                if sizes[q] > sizes[donor]:
                    donor = q
            sizes[donor] -= 1
    return sizes


def loss_weight(b_r: int, global_batch: int, world: int) -> float:
    """Factor on rank r's mean loss so that the all-reduced average gradient is the global-batch one."""
    return b_r / (global_batch / world)
