# valid: split_wait_by_lookup
# exercise: frame
# replaces: frame_solution
# why: the latest arrival per (group, seq) looked up from a dict instead of broadcast by transform, new
#      columns assigned on a copy, and the metrics computed through the hourly price of the whole fleet:
#      the same numbers, rows and index
def split_wait(calls: pd.DataFrame) -> pd.DataFrame:
    """``calls`` with ``wait_s`` (until the last rank entered the same collective) and ``transfer_s`` (from
    then until this rank left it)."""
    latest: dict[tuple, float] = {}
    for g, s, t0 in zip(calls["group"], calls["seq"], calls["t_start"], strict=True):
        latest[(g, s)] = max(t0, latest.get((g, s), -math.inf))
    last = [latest[(g, s)] for g, s in zip(calls["group"], calls["seq"], strict=True)]
    out = calls.copy()
    out["wait_s"] = [lt - t0 for lt, t0 in zip(last, calls["t_start"], strict=True)]
    out["transfer_s"] = [t1 - lt for lt, t1 in zip(last, calls["t_end"], strict=True)]
    return out


def baseline_metrics(step_s: float, batch: int, steps_to_target: int | None, price_per_device_hour: float,
                     devices: int = 1) -> dict[str, float]:
    """samples_per_s, time_to_target_s, cost_to_target and cost_per_million_samples (definitions above)."""
    fleet_per_hour = devices * price_per_device_hour
    samples_per_s = batch * devices / step_s
    if steps_to_target is None:
        seconds = math.inf
    else:
        seconds = step_s * steps_to_target
    return {"samples_per_s": samples_per_s, "time_to_target_s": seconds,
            "cost_to_target": fleet_per_hour * seconds / 3600,
            "cost_per_million_samples": fleet_per_hour * (1e6 / samples_per_s) / 3600}
