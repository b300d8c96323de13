"""Evidence for the trusted judge: what a hidden test cell *records* instead of deciding (DESIGN.md).

A graded test cell runs in the student's (sandboxed) kernel, so nothing it decides there can be trusted: the
student's code shares the process and can patch ``torch.allclose``, clear errors or fake results. Instead the
hidden part of a test cell records the student's outputs on inputs drawn at grading time, and a judge outside
the sandbox (``autograder.judge``) compares them with what the *reference* run recorded for the same seed::

    from course_dist.evidence import Evidence, grading_seed

    ev = Evidence("sampler_tests")                   # the grade_id of this cell
    rng = random.Random(grading_seed())              # variants drawn at grading time
    ev.equal("n=10 world=3 rank=1", rank_indices(10, 3, 1))
    ev.close("params after 4 steps", state, atol=1e-5)
    ev.rule("card", {"card": ..., "measured": ...}, rule="common.card", rtol=0.25)

Values: ``None``, ``bool``, ``int``, ``float``, ``str``, ``torch.Tensor`` and lists/tuples/str-keyed dicts of
these (what ``torch.load(weights_only=True)`` reads back - never an arbitrary pickle). Each call rewrites
``$COURSE_EVIDENCE_DIR/<grade_id>.pt`` atomically, so a cell that dies half-way leaves what it recorded so
far. Without ``COURSE_EVIDENCE_DIR`` (a student's own run) evidence stays in memory; the notebook behaves the
same.

The comparison spec a cell states (``equal``/``close``/``rule`` and its parameters) is only *read from the
reference run*; a student's arguments are ignored by the judge.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any

EVIDENCE_DIR_VAR = "COURSE_EVIDENCE_DIR"
SEED_VAR = "COURSE_GRADE_SEED"
FORMAT = 1
_GRADE_ID = re.compile(r"^[A-Za-z0-9_-]+$")
_RULE = re.compile(r"^[a-z][a-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*$")
MAX_BYTES = 16 << 20  # per grade cell: evidence is summaries, not checkpoints


def grading_seed(default: int = 0) -> int:
    """The seed of this grading run (``$COURSE_GRADE_SEED``), ``default`` outside grading."""
    raw = os.environ.get(SEED_VAR, "")
    if raw == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ValueError(f"{SEED_VAR}={raw!r} is not an integer seed") from exc


def _clean(value: Any, where: str) -> Any:
    """A copy of ``value`` made only of the types the judge loads safely; ValueError naming the offender."""
    import torch

    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, torch.Tensor):
        # detached CPU copy: no autograd graph, no device, no view of a bigger storage
        return value.detach().to("cpu").clone()
    if isinstance(value, (list, tuple)):
        return [_clean(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise ValueError(f"evidence {where}: dict keys must be str, got {k!r} ({type(k).__name__})")
            out[k] = _clean(v, f"{where}[{k!r}]")
        return out
    try:  # numpy scalars and 0-d things that know how to be a Python number
        import numpy as np

        if isinstance(value, np.generic):
            return value.item()
        if isinstance(value, np.ndarray):
            return torch.as_tensor(value).clone()
    except ImportError:  # pragma: no cover - numpy ships with torch's deps here
        pass
    raise ValueError(
        f"evidence {where}: unsupported type {type(value).__name__}; record None/bool/int/float/str/tensors "
        "or lists/dicts of them (DataFrame: df.to_dict('list'); numpy: torch.as_tensor)"
    )


class Evidence:
    """What one graded test cell recorded; ``Evidence(grade_id)`` starts empty (a re-run cell starts over)."""

    def __init__(self, grade_id: str) -> None:
        if not isinstance(grade_id, str) or not _GRADE_ID.match(grade_id):
            raise ValueError(f"grade_id must match [A-Za-z0-9_-]+, got {grade_id!r}")
        self.grade_id = grade_id
        self.records: dict[str, dict[str, Any]] = {}
        d = os.environ.get(EVIDENCE_DIR_VAR, "")
        self.path: Path | None = Path(d) / f"{grade_id}.pt" if d else None
        self._write()

    # ---- the three kinds of check -------------------------------------------------------------------------
    def equal(self, key: str, value: Any) -> None:
        """Judge: the student's value equals the reference's exactly (tensors: shape, dtype, values)."""
        self._put(key, value, {"cmp": "equal"})

    def close(self, key: str, value: Any, *, atol: float = 0.0, rtol: float = 0.0) -> None:
        """Judge: same structure as the reference, every number within ``atol + rtol * |reference|``."""
        for name, tol in (("atol", atol), ("rtol", rtol)):
            if (
                not isinstance(tol, (int, float))
                or isinstance(tol, bool)
                or not math.isfinite(tol)
                or tol < 0
            ):
                raise ValueError(f"{name} must be a finite number >= 0, got {tol!r}")
        self._put(key, value, {"cmp": "close", "atol": float(atol), "rtol": float(rtol)})

    def rule(self, key: str, value: Any, *, rule: str, **params: Any) -> None:
        """Judge: ``autograder.judges.<module>.<function>(student, reference, **params)`` passes."""
        if not isinstance(rule, str) or not _RULE.match(rule):
            raise ValueError(f"rule must look like '<module>.<function>' (e.g. 'common.card'), got {rule!r}")
        self._put(key, value, {"cmp": "rule", "rule": rule, "params": _clean(params, f"{key} params")})

    # ---- storage ------------------------------------------------------------------------------------------
    def _put(self, key: str, value: Any, spec: dict[str, Any]) -> None:
        # Returns None on purpose: a test cell ending in ev.equal(...) must not show a number (nbgrader
        # reads a numeric last expression as partial credit).
        if not isinstance(key, str) or not key:
            raise ValueError(f"evidence key must be a non-empty str, got {key!r}")
        self.records[key] = {"value": _clean(value, key), "spec": spec}
        self._write()

    def _write(self) -> None:
        if self.path is None:
            return
        import torch

        payload = {"format": FORMAT, "grade_id": self.grade_id, "records": self.records}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        torch.save(payload, tmp)
        size = tmp.stat().st_size
        if size > MAX_BYTES:
            tmp.unlink()
            raise ValueError(
                f"evidence of {self.grade_id} is {size} bytes (> {MAX_BYTES}): record summaries, not models"
            )
        os.replace(tmp, self.path)  # atomic: the judge never reads half a file

    def __len__(self) -> int:
        return len(self.records)

    def __repr__(self) -> str:
        return f"Evidence({self.grade_id!r}, {len(self.records)} records, path={self.path})"
