# mutant: pipeline_no_warmup
# exercise: pipeline
# replaces: pipeline_solution
# why: 1F1B without warm-up forwards: every stage alternates F, B from the start (no pipelining)
def schedule(kind: str, stage: int, p: int, m: int) -> list[tuple[str, int]]:
    """Ordered actions of ``stage`` (of ``p``) for ``m`` micro-batches under ``kind`` ("gpipe" or "1f1b")."""
    ### BEGIN SOLUTION
    if kind == "gpipe":
        return [("F", i) for i in range(m)] + [("B", i) for i in range(m)]
    if kind != "1f1b":
        raise ValueError(f"kind must be 'gpipe' or '1f1b', got {kind!r}")
    warmup = 0
    actions = [("F", i) for i in range(warmup)]
    f, b = warmup, 0
    while b < m:
        if f < m:
            actions.append(("F", f))
            f += 1
        actions.append(("B", b))
        b += 1
    return actions
    ### END SOLUTION
