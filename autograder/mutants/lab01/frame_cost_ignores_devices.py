# mutant: frame_cost_ignores_devices
# exercise: frame
# replaces: frame_solution
# why: prices one device per second however many are rented
def validate_brief(brief: dict) -> None:
    """Raise ValueError naming the field (``section.field``) and the value received if ``brief`` breaks a
    rule above; return None otherwise."""
    ### BEGIN SOLUTION
    for section, fields in BRIEF_FIELDS.items():
        part = brief.get(section) if isinstance(brief, dict) else None
        if not isinstance(part, dict):
            raise ValueError(f"brief section {section!r} must be a dict, got {part!r}")
        for f in fields:
            v = part.get(f)
            if v is None or (isinstance(v, str) and not v.strip()):
                raise ValueError(f"{section}.{f} is missing or empty: got {v!r}")
    data, metric = brief["data"], brief["metric"]
    when = {}
    for f in ("event_time", "available_from", "available_until"):
        try:
            when[f] = datetime.fromisoformat(str(data[f]))
        except ValueError:
            raise ValueError(f"data.{f} is not an ISO-8601 time: got {data[f]!r}") from None
    if not when["available_from"] < when["available_until"]:
        raise ValueError(f"data.available_until {data['available_until']!r} must be after "
                         f"data.available_from {data['available_from']!r}")
    if when["event_time"] > when["available_from"]:
        raise ValueError(f"data.event_time {data['event_time']!r} is after data.available_from "
                         f"{data['available_from']!r}: a snapshot cannot hold events from its future")
    for f, is_int, low, strict in (("target_loss", False, 0, True), ("price_per_device_hour", False, 0, False),
                                   ("devices", True, 1, False), ("batch", True, 1, False)):
        v = metric[f]
        kinds = (int,) if is_int else (int, float)
        if isinstance(v, bool) or not isinstance(v, kinds) or (v <= low if strict else v < low):
            raise ValueError(f"metric.{f} must be {'an int' if is_int else 'a number'} "
                             f"{'>' if strict else '>='} {low}, got {v!r}")
    ### END SOLUTION


def baseline_metrics(step_s: float, batch: int, steps_to_target: int | None, price_per_device_hour: float,
                     devices: int = 1) -> dict[str, float]:
    """samples_per_s, time_to_target_s, cost_to_target and cost_per_million_samples (definitions above)."""
    ### BEGIN SOLUTION
    samples_per_s = devices * batch / step_s
    per_second = price_per_device_hour / 3600  # what the devices cost per second, busy or not
    time_to_target = math.inf if steps_to_target is None else steps_to_target * step_s
    return {"samples_per_s": samples_per_s, "time_to_target_s": time_to_target,
            "cost_to_target": time_to_target * per_second,
            "cost_per_million_samples": 1e6 / samples_per_s * per_second}
    ### END SOLUTION
