"""Judge rules of the homework (``rule="homework.<name>"``): run-dependent facts recomputed from what the
student's own runs logged, never from a number the notebook computed for itself.

Each rule is ``fn(student_value, reference_value, **params)`` and raises ``AssertionError`` naming the values.
"""

from __future__ import annotations

import math
from typing import Any

from autograder.judges import common


def _fp_diff(a: Any, b: Any, where: str, rtol: float, atol: float) -> str | None:
    """First difference between two fingerprints (:func:`course_dist.labkit.homework.fingerprint`)."""
    import torch

    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return f"{where}: keys {sorted(a)} vs {sorted(b)}"
        for k in sorted(a):
            p = _fp_diff(a[k], b[k], f"{where}.{k}", rtol, atol)
            if p:
                return p
        return None
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape:
            return f"{where}: shape {tuple(a.shape)} vs {tuple(b.shape)}"
        d = (a.double() - b.double()).abs()
        lim = atol + rtol * b.double().abs()
        if bool((d > lim).any()):
            return f"{where}: max |diff| {float(d.max()):.3g} (rtol {rtol:g}, atol {atol:g})"
        return None
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if abs(float(a) - float(b)) > atol + rtol * abs(float(b)):
            return f"{where}: {a!r} vs {b!r} (rtol {rtol:g}, atol {atol:g})"
        return None
    return None if a == b else f"{where}: {a!r} vs {b!r}"


def bitwise_pair(student_value: Any, reference_value: Any = None) -> None:
    """``{"base": fp, "other": fp}``: the interrupted run (``other``) equals the uninterrupted one (``base``)
    exactly. Both are the student's own runs: the learning-rate schedule and summation order are theirs, so
    the reference's numbers are no yardstick here."""
    assert isinstance(student_value, dict) and {"base", "other"} <= set(student_value), (
        f"expected {{'base': fingerprint, 'other': fingerprint}}, got {type(student_value).__name__}"
    )
    p = _fp_diff(student_value["other"], student_value["base"], "interrupted vs uninterrupted", 0.0, 0.0)
    assert p is None, f"not bitwise equal: {p}"


def close_pair(
    student_value: Any, reference_value: Any = None, *, rtol: float = 1e-4, atol: float = 1e-5
) -> None:
    """``{"a": x, "b": y}`` (numbers, lists, fingerprints): ``a`` close to ``b`` within ``atol + rtol |b|``
    (two of the student's own runs that must agree, e.g. world 1 and world 2 at one global batch)."""
    assert isinstance(student_value, dict) and {"a", "b"} <= set(student_value), (
        f"expected {{'a': ..., 'b': ...}}, got {type(student_value).__name__}"
    )
    a, b = student_value["a"], student_value["b"]
    if isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), f"lengths differ: {len(a)} vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            p = _fp_diff(x, y, f"[{i}]", rtol, atol)
            assert p is None, p
        return
    p = _fp_diff(a, b, "value", rtol, atol)
    assert p is None, p


def scaling(student_value: Any, reference_value: Any = None, *, rtol: float = 1e-6) -> None:
    """``{"table": {...columns...}, "logs": {...}}``: the table's throughput equals the one recomputed from
    the runs' metrics logs, efficiency = thr / (world x thr_1), cost = world / thr, world 1 first."""
    t, logs = student_value.get("table") or {}, student_value.get("logs") or {}
    for col in ("world", "samples_per_s", "efficiency", "cost_per_sample"):
        assert col in t, f"scaling table lacks {col!r}: has {sorted(t)}"
    worlds, thr = [int(w) for w in t["world"]], [float(x) for x in t["samples_per_s"]]
    assert worlds and worlds[0] == 1, f"worlds {worlds}: world 1 (the baseline) must come first"
    log_thr = dict(zip([int(w) for w in logs.get("world", [])], logs.get("samples_per_s", []), strict=False))
    for w, x, eff, cost in zip(worlds, thr, t["efficiency"], t["cost_per_sample"], strict=True):
        assert w in log_thr, f"world {w}: no run of that size in the metrics logs ({sorted(log_thr)})"
        assert math.isclose(x, log_thr[w], rel_tol=rtol), (
            f"world {w}: table says {x:.6g} samples/s, the metrics logs give {log_thr[w]:.6g} "
            "(global batch / median slowest-rank step time)"
        )
        want = x / (w * thr[0])
        assert math.isclose(float(eff), want, rel_tol=rtol), (
            f"world {w}: efficiency {eff} != thr/(w thr1) {want}"
        )
        assert math.isclose(float(cost), w / x, rel_tol=rtol), f"world {w}: cost {cost} != world/thr {w / x}"


def straggler(student_value: Any, reference_value: Any = None, *, min_fraction: float = 0.5) -> None:
    """``{"slow_rank", "reported", "waited_s", "steps", "delay_s", "per_step"}``: the report names the slowed
    rank and the others waited at least ``min_fraction`` of the injected delay over ``steps - 1`` steps."""
    v = student_value
    assert v.get("reported") == v.get("slow_rank"), (
        f"injected the slowness on rank {v.get('slow_rank')}, the report names rank {v.get('reported')}"
    )
    need = min_fraction * (int(v["steps"]) - 1) * float(v["delay_s"]) * int(v.get("per_step", 1))
    assert float(v["waited_s"]) >= need, (
        f"others waited {float(v['waited_s']):.3f} s, expected >= {need:.3f} s"
    )


def card(student_value: Any, reference_value: Any = None, *, rtol: float = 0.25) -> None:
    """``{"card": {...}, "raw": {...}}``: ``measured`` is recomputed here from the raw logged numbers
    (recovery
    time of the kill drill, checkpoint and step seconds, the world-2 throughput recomputed from the scaling
    logs, the restarts the drill allowed), then ``common.card`` checks the card against it."""
    raw = student_value.get("raw") or {}
    ck, st = [float(x) for x in raw.get("ckpt_seconds", [])], [float(x) for x in raw.get("step_seconds", [])]
    assert ck and st, f"no checkpoint/step seconds logged (checkpoints {len(ck)}, steps {len(st)})"
    log_thr = dict(zip(raw.get("scaling_world", []), raw.get("scaling_samples_per_s", []), strict=False))
    assert 2 in log_thr, f"no world-2 run in the scaling logs: {sorted(log_thr)}"
    measured = {
        "latency": float(raw["recovery_s"]),
        "cost": 100.0 * sum(ck) / (sum(st) + sum(ck)),
        "capacity": float(log_thr[2]),
        "fallback": float(raw["max_restarts"]),
    }
    common.card({"card": student_value.get("card"), "measured": measured}, None, rtol=rtol)
