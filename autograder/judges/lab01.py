"""Trusted rules of lab 01 (``rule="lab01.<name>"``): run-dependent numbers re-derived from the student's own
recorded measurements, never compared with the reference machine's timings.

- ``fits_match``: the student's alpha/beta per collective equal a least-squares refit of the student's own
  (bytes, time) measurements on the bus-bytes axis;
- ``decision_consistent``: the student's chosen candidate is what the decision rules pick from the student's
  own candidate table;
- ``break_even_matches``: the student's break-even batch is the one the student's own fit and compute give;
- ``step_time_matches``: a simulated DDP step is the student's compute plus one ring all-reduce at the
  student's own fit (none at world 1).
"""

from __future__ import annotations

import math
from typing import Any

RING = {  # collective -> (steps(N), bus_factor(N)), the exercise's table
    "all_reduce": (lambda n: 2 * (n - 1), lambda n: 2 * (n - 1) / n),
    "all_gather": (lambda n: n - 1, lambda n: (n - 1) / n),
    "reduce_scatter": (lambda n: n - 1, lambda n: (n - 1) / n),
    "broadcast": (lambda n: 1, lambda n: 1.0),
    "send_recv": (lambda n: 1, lambda n: 1.0),
}


def _refit(sizes: list[float], times: list[float], collective: str, world: int) -> tuple[float, float]:
    x = [RING[collective][1](world) * float(s) for s in sizes]
    n = len(x)
    mx, mt = sum(x) / n, sum(times) / n
    sxx = sum((v - mx) ** 2 for v in x)
    assert sxx > 0, f"{collective}: the recorded sizes {sizes} have no spread; cannot fit"
    slope = sum((v - mx) * (t - mt) for v, t in zip(x, times, strict=True)) / sxx
    return (mt - slope * mx) / RING[collective][0](world), slope


def fits_match(
    student_value: Any, reference_value: Any = None, *, world: int = 2, rtol: float = 1e-6
) -> None:
    """``{collective: {"bytes": [...], "time_s": [...], "alpha": a, "beta": b}}``: every collective the
    reference fitted is present, and (a, b) equal the refit of the student's own numbers."""
    assert isinstance(student_value, dict), f"expected a dict of fits per collective, got {student_value!r}"
    for coll in reference_value or {}:
        rec = student_value.get(coll)
        assert isinstance(rec, dict), f"no fit recorded for {coll}"
        a, b = _refit(rec["bytes"], rec["time_s"], coll, world)
        scale_a = max(abs(a), 1e-9)  # alpha near 0 on a fast link: compare on a microsecond scale
        got_a, got_b = float(rec["alpha"]), float(rec["beta"])
        assert math.isfinite(got_a) and abs(got_a - a) <= rtol * scale_a + 1e-12, (
            f"{coll}: alpha {got_a:.6g} s, the refit of your measurements gives {a:.6g} s"
        )
        assert math.isfinite(got_b) and abs(got_b - b) <= rtol * abs(b) + 1e-18, (
            f"{coll}: beta {got_b:.6g} s/B, the refit of your measurements gives {b:.6g} s/B"
        )


def _decide(c: dict[str, list], kw: dict[str, Any]) -> tuple[str, int] | None:
    rows = [dict(zip(c, vals, strict=True)) for vals in zip(*c.values(), strict=True)]
    ok = [
        r
        for r in rows
        if r["mem_bytes"] <= kw["mem_budget"]
        and r["tp"] <= kw["gpus_per_node"]
        and r["dp"] * kw["micro_batch"] <= kw["global_batch"]
        and r["ranks"] <= kw["max_ranks"]
    ]
    if not ok:
        return None
    best = min(r["step_s"] for r in ok)
    near = [
        (r["ranks"], r["step_s"], i, r)
        for i, r in enumerate(ok)
        if r["step_s"] <= best * (1 + kw.get("tolerance", 0.05))
    ]
    r = min(near, key=lambda t: t[:3])[3]
    return (r["strategy"], int(r["ranks"]))


def decision_consistent(student_value: Any, reference_value: Any = None) -> None:
    """``{"candidates": table as lists, "kw": decide's keywords, "chosen": [strategy, ranks]}``: the choice is
    what the rules pick from that very table."""
    assert isinstance(student_value, dict), f"expected candidates, kw and chosen, got {student_value!r}"
    want = _decide(student_value["candidates"], student_value["kw"])
    got = tuple(student_value["chosen"]) if student_value.get("chosen") is not None else None
    assert want is not None, "no candidate of your own table is feasible, yet a card was made"
    assert got == want, f"chose {got} from your candidates; the rules pick {want}"


def break_even_matches(student_value: Any, reference_value: Any = None, *, rtol: float = 1e-9) -> None:
    """``{"sample_s", "grad_bytes", "world", "alpha", "beta", "batch"}``: ``batch`` is the break-even per-rank
    batch of those numbers, all-reduce time / ((world - 1) * sample_s)."""
    assert isinstance(student_value, dict), f"expected the break-even inputs and batch, got {student_value!r}"
    v, w = student_value, int(student_value["world"])
    comm = 2 * (w - 1) * v["alpha"] + 2 * (w - 1) / w * v["grad_bytes"] * v["beta"]  # one ring all-reduce
    want = comm / ((w - 1) * v["sample_s"])
    got = float(student_value["batch"])
    assert math.isfinite(got) and abs(got - want) <= rtol * abs(want) + 1e-12, (
        f"break-even at world {w}: {got:.6g} samples per rank; your fit and compute give {want:.6g}"
    )


def step_time_matches(student_value: Any, reference_value: Any = None, *, rtol: float = 1e-9) -> None:
    """``{"compute_s", "grad_bytes", "world", "alpha", "beta", "step_s"}``: ``step_s`` is the compute plus one
    ring all-reduce of the gradients at those numbers, and the compute alone at world 1."""
    assert isinstance(student_value, dict), f"expected the step-time inputs and step_s, got {student_value!r}"
    v, w = student_value, int(student_value["world"])
    comm = 0.0 if w == 1 else 2 * (w - 1) * v["alpha"] + 2 * (w - 1) / w * v["grad_bytes"] * v["beta"]
    want = v["compute_s"] + comm
    got = float(student_value["step_s"])
    assert math.isfinite(got) and abs(got - want) <= rtol * abs(want) + 1e-15, (
        f"simulated step at world {w}: {got:.6g} s; compute {v['compute_s']:.6g} s + all-reduce {comm:.6g} s "
        f"(your fit) give {want:.6g} s"
    )
