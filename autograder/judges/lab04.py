"""Lab 04's judge rules: where equality with the reference run is not meaningful.

- :func:`same_global_batches` - an elastic sampler may deal a global batch out in any order, as long as the
  ranks together hold exactly that batch (the reference's shares, as a multiset), sizes within one, and every
  rank has the same number of batches.
- :func:`recovery_matches_log` - recovery times are wall-clock numbers of *this* run: the student's
  reported values must equal what their own ``progress.log`` says, recomputed here from the log's raw rows
  (:func:`recovery_from_log`, the oracle: it lives with the judge, not in the student's package), not the
  reference's.
- :func:`card` - the solution card against the student's *own* raw measurements: the measured limits are
  recomputed here from the raw numbers (so a tampered ``measured`` dict cannot help), then ``common.card``.

Each is called as ``fn(student_value, reference_value, **params)`` with the reference's params and raises
AssertionError naming the values.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from autograder.judges import common


def _short(x: Any, limit: int = 100) -> str:
    text = repr(x)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def same_global_batches(student_value: Any, reference_value: Any) -> None:
    """Per-rank batch lists (``[rank][batch][index]``): same global batches as the reference, fair shares."""
    ref, got = reference_value, student_value
    assert isinstance(got, list), f"expected a list of per-rank batch lists, got {_short(got)}"
    assert len(got) == len(ref), f"{len(got)} ranks' batches recorded, expected {len(ref)}"
    counts = [len(r) for r in got]
    want = len(ref[0]) if ref else 0
    assert all(c == want for c in counts), (
        f"ranks have {counts} batches, the rest of the epoch is {want} global batches (every rank the same)")
    for j in range(want):
        glob = Counter(i for r in ref for i in r[j])
        mine = [list(r[j]) for r in got]
        union = Counter(i for b in mine for i in b)
        if union != glob:
            lost = sorted((glob - union).elements())[:5]
            extra = sorted((union - glob).elements())[:5]
            raise AssertionError(f"global batch {j}: lost {lost}, extra or repeated {extra}")
        sizes = [len(b) for b in mine]
        assert max(sizes) - min(sizes) <= 1, f"global batch {j} split unevenly: {sizes} samples per rank"


def recovery_from_log(log: dict[str, list]) -> dict[str, list]:
    """Per restart, from progress.log's raw columns ``{"attempt", "step", "time"}``: ``recovery_s`` (the first
    step completed by the next attempt minus the last step completed by the failed one) and ``lost_steps``
    (steps the failed attempt completed beyond the step the next attempt resumed from: its first step - 1)."""
    rows = list(zip(log["attempt"], log["step"], log["time"], strict=True))
    attempts = sorted({int(a) for a, _, _ in rows})
    recovery, lost = [], []
    for a, nxt in zip(attempts, attempts[1:], strict=False):
        failed = [(s, t) for x, s, t in rows if int(x) == a]
        new = [(s, t) for x, s, t in rows if int(x) == nxt]
        recovery.append(float(min(t for _, t in new) - max(t for _, t in failed)))
        lost.append(int(max(s for s, _ in failed)) - (int(min(s for s, _ in new)) - 1))
    return {"recovery_s": recovery, "lost_steps": lost}


def recovery_matches_log(student_value: Any, reference_value: Any, *, atol: float = 1e-3) -> None:
    """``{"reported": [...], "log": {"attempt", "step", "time"}}``: one recovery time per restart, equal to
    the one recomputed from the student's own raw progress.log rows; as many restarts as the reference's."""
    assert isinstance(student_value, dict), f"expected {{'reported', 'log'}}, got {_short(student_value)}"
    rep, raw = student_value.get("reported"), student_value.get("log")
    assert isinstance(rep, list) and isinstance(raw, dict), f"reported {_short(rep)}, log {_short(raw)}"
    try:
        log = recovery_from_log(raw)["recovery_s"]
        n_ref = len(recovery_from_log(reference_value["log"])["recovery_s"])
    except (KeyError, TypeError, ValueError) as exc:
        raise AssertionError(f"progress.log rows unreadable ({exc}): {_short(raw)}") from None
    assert len(log) == n_ref, f"progress.log shows {len(log)} restarts, the reference run {n_ref}"
    assert len(rep) == len(log), (
        f"reported {len(rep)} recovery times {_short(rep)}, progress.log has {len(log)}")
    for i, (a, b) in enumerate(zip(rep, log, strict=True)):
        assert isinstance(a, int | float) and math.isfinite(a), f"restart {i}: recovery time {a!r}"
        assert b > 0, f"restart {i}: progress.log says {b!r} s (a new attempt's step before the old one's?)"
        assert abs(a - b) <= atol, (
            f"restart {i}: reported recovery {a:.4f} s, progress.log says {b:.4f} s (first step of the new "
            f"attempt minus the last step of the failed one)")


def card(student_value: Any, reference_value: Any, *, rtol: float = 0.25) -> None:
    """``{"card": asdict(card), "raw": measure_save(...) + recovery_s}``; the limits recomputed from raw."""
    assert isinstance(student_value, dict) and isinstance(student_value.get("raw"), dict), (
        f"expected {{'card', 'raw'}}, got {_short(student_value)}")
    raw = student_value["raw"]
    try:
        step_s, save_s, every = float(raw["step_s"]), float(raw["save_s"]), float(raw["every"])
        rec, size = float(raw["recovery_s"]), float(raw["bytes_per_rank"])
    except (KeyError, TypeError, ValueError) as exc:
        raise AssertionError(f"raw measurements incomplete ({exc}): {_short(raw)}") from None
    assert step_s > 0 and save_s > 0 and every > 0 and rec > 0 and size > 0, f"raw measurements {raw}"
    measured = {"latency": rec, "cost": 100.0 * save_s / (every * step_s), "capacity": size,
                "fallback": 2 * every * step_s + rec}
    common.card({"card": student_value.get("card"), "measured": measured}, None, rtol=rtol)
