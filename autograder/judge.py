"""The trusted judge: decides graded test cells from recorded evidence, outside the student's process.

A student's kernel records evidence (``course_dist.evidence``): for each graded test cell, a file
``<grade_id>.pt`` of ``{key: {"value": ..., "spec": ...}}``. The *reference* run (reference solutions, same
seed and mode) records the same keys. The judge compares, for every key the reference recorded, the student's
value by the reference's spec - the student's own spec is never read::

    from autograder.judge import load_evidence, judge_cell
    ref, stu = load_evidence(ref_dir), load_evidence(stu_dir)
    problems = judge_cell("sampler_tests", ref["sampler_tests"], stu.get("sampler_tests"))   # [] = pass

Specs: ``equal`` (same structure; tensors ``torch.equal`` with the same dtype; floats ``==``, NaN equals NaN),
``close`` (same structure; ``|s - r| <= atol + rtol * |r|`` elementwise), ``rule`` (a trusted function
``autograder.judges.<module>.<function>(student_value, reference_value, **params)`` raising AssertionError).
Evidence files are read with ``torch.load(weights_only=True)``: tensors and plain containers, never code.
"""

from __future__ import annotations

import importlib
import json
import logging
import math
import os
import re
import shutil
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger("autograder.judge")
MAX_FILE_BYTES = 32 << 20  # per evidence file (the writer caps at 16 MiB): never load a student's giant file
MAX_FILES = 2000  # evidence files per notebook considered (a student may create any number)
MAX_MESSAGE = 300  # characters per problem: enough for the values, short enough for a CSV reason
_RULE = re.compile(r"^[a-z][a-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*$")


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---- loading ---------------------------------------------------------------------------------------------
def load_file(path: Path) -> dict[str, dict]:
    """The records of one evidence file, or ValueError saying why it cannot be trusted."""
    import io

    import torch

    try:
        # O_NOFOLLOW + fstat: a student's symlink (or a file swapped in for one) is never followed
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # NONBLOCK: a FIFO cannot hang us
    except OSError as exc:
        raise ValueError(f"{path.name}: not a readable regular file ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{path.name}: not a regular file")
        if st.st_size > MAX_FILE_BYTES:
            raise ValueError(f"{path.name}: {st.st_size} bytes of evidence (> {MAX_FILE_BYTES}): not read")
        data = fh.read(MAX_FILE_BYTES + 1)
    try:
        payload = torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
    except Exception as exc:  # a truncated file, a pickle with code in it, garbage: all "no evidence"
        raise ValueError(
            f"{path.name}: unreadable evidence ({type(exc).__name__}: {_short(str(exc), 160)})"
        ) from None
    if not isinstance(payload, dict) or not isinstance(payload.get("records"), dict):
        raise ValueError(f"{path.name}: not an evidence file (no records mapping)")
    if payload.get("grade_id") != path.stem:
        raise ValueError(f"{path.name}: records grade_id {payload.get('grade_id')!r}, not {path.stem!r}")
    records = {}
    for key, rec in payload["records"].items():
        if not isinstance(key, str) or not isinstance(rec, dict) or "value" not in rec:
            raise ValueError(f"{path.name}: malformed record {_short(key)}")
        records[key] = rec
    return records


def load_evidence(directory: Path | str) -> dict[str, dict[str, dict] | ValueError]:
    """grade_id -> records (or the ValueError that made that cell's file untrustworthy) for every ``*.pt``."""
    out: dict[str, dict[str, dict] | ValueError] = {}
    d = Path(directory)
    if not d.is_dir():
        return out
    for path in sorted(d.glob("*.pt"))[:MAX_FILES]:
        if (
            path.is_symlink() or not path.is_file()
        ):  # a student's symlink to somebody else's file is no evidence
            out[path.stem] = ValueError(f"{path.name}: not a regular file")
            continue
        try:
            out[path.stem] = load_file(path)
        except ValueError as exc:
            out[path.stem] = exc
    return out


# ---- comparing -------------------------------------------------------------------------------------------
def _compare(s: Any, r: Any, where: str, close: dict | None) -> str | None:
    """None if student value ``s`` matches reference ``r`` (exactly, or within ``close``'s atol/rtol)."""
    import torch

    if isinstance(r, torch.Tensor):
        if not isinstance(s, torch.Tensor):
            got = f"{type(s).__name__} {_short(s, 60)}"
            return f"{where}: expected a tensor {tuple(r.shape)} {r.dtype}, got {got}"
        if s.shape != r.shape:
            return f"{where}: shape {tuple(s.shape)} != expected {tuple(r.shape)}"
        if close is None:
            if s.dtype != r.dtype:
                return f"{where}: dtype {s.dtype} != expected {r.dtype}"
            if torch.equal(s, r) or (
                s.is_floating_point()
                and torch.equal(s.isnan(), r.isnan())
                and torch.equal(s.nan_to_num(0.0), r.nan_to_num(0.0))
            ):
                return None
        elif s.numel() == 0:
            return None
        else:
            sd, rd = s.double(), r.double()
            nan_ok = torch.equal(sd.isnan(), rd.isnan())
            diff = (sd - rd).abs().nan_to_num(0.0)
            bound = close["atol"] + close["rtol"] * rd.abs().nan_to_num(0.0)
            if nan_ok and bool((diff <= bound).all()):
                return None
        bad = (s.double() - r.double()).abs().nan_to_num(float("inf")) if s.numel() else torch.zeros(0)
        idx = int(bad.reshape(-1).argmax()) if bad.numel() else 0
        flat_s, flat_r = s.reshape(-1), r.reshape(-1)
        tol = "" if close is None else f" (atol {close['atol']:g}, rtol {close['rtol']:g})"
        return (
            f"{where}: max |diff| {float(bad.max()) if bad.numel() else 0:.4g}{tol}; at flat index {idx}: "
            f"got {flat_s[idx].item() if s.numel() else None!r}, "
            f"expected {flat_r[idx].item() if r.numel() else None!r}"
        )
    if isinstance(r, dict):
        if not isinstance(s, dict):
            return f"{where}: expected a dict, got {type(s).__name__}"
        if set(s) != set(r):
            missing, extra = sorted(set(r) - set(s)), sorted(set(s) - set(r))
            return f"{where}: keys differ (missing {_short(missing, 80)}, unexpected {_short(extra, 80)})"
        for k in r:
            p = _compare(s[k], r[k], f"{where}[{k!r}]", close)
            if p:
                return p
        return None
    if isinstance(r, (list, tuple)):
        if not isinstance(s, (list, tuple)):
            return f"{where}: expected a list of {len(r)}, got {type(s).__name__} {_short(s, 60)}"
        if len(s) != len(r):
            both = f"got {_short(s, 80)}, expected {_short(r, 80)}"
            return f"{where}: length {len(s)} != expected {len(r)} ({both})"
        for i, (a, b) in enumerate(zip(s, r, strict=True)):
            p = _compare(a, b, f"{where}[{i}]", close)
            if p:
                return (
                    p
                    if close is not None or isinstance(b, (dict, list, tuple))
                    else (f"{where}: got {_short(s)}, expected {_short(r)} (first difference at [{i}])")
                )
        return None
    if isinstance(r, bool) or r is None or isinstance(r, str):
        if type(s) is type(r) and s == r:
            return None
        return f"{where}: got {_short(s)}, expected {_short(r)}"
    if isinstance(r, (int, float)):
        if isinstance(s, bool) or not isinstance(s, (int, float)):
            return f"{where}: expected a number, got {type(s).__name__} {_short(s, 60)}"
        if close is None:
            if isinstance(r, int) and not isinstance(s, int) and not float(s).is_integer():
                return f"{where}: got {s!r}, expected {r!r}"
            if s == r or (isinstance(s, float) and isinstance(r, float) and math.isnan(s) and math.isnan(r)):
                return None
            return f"{where}: got {s!r}, expected {r!r}"
        if math.isnan(float(r)) or math.isnan(float(s)):
            return (
                None
                if math.isnan(float(r)) and math.isnan(float(s))
                else f"{where}: got {s!r}, expected {r!r}"
            )
        if abs(s - r) <= close["atol"] + close["rtol"] * abs(r):
            return None
        return (
            f"{where}: got {s!r}, expected {r!r} (|diff| {abs(s - r):.4g} > atol {close['atol']:g} "
            f"+ rtol {close['rtol']:g}·|expected|)"
        )
    return f"{where}: reference value of unsupported type {type(r).__name__}"


def load_rule(name: str) -> Callable[..., Any]:
    """``'<module>.<function>'`` -> ``autograder.judges.<module>.<function>`` (trusted code only)."""
    if not isinstance(name, str) or not _RULE.match(name):
        raise ValueError(f"rule must look like '<module>.<function>', got {name!r}")
    module, fn = name.split(".")
    mod = importlib.import_module(f"autograder.judges.{module}")
    rule = getattr(mod, fn, None)
    if not callable(rule) or fn.startswith("_"):
        raise ValueError(f"no rule {fn!r} in autograder.judges.{module}")
    return rule


def check(key: str, spec: dict, student_value: Any, reference_value: Any) -> str | None:
    """One record: None if it passes, else the problem (bounded length)."""
    kind = spec.get("cmp")
    try:
        if kind == "equal":
            problem = _compare(student_value, reference_value, key, None)
        elif kind == "close":
            problem = _compare(
                student_value,
                reference_value,
                key,
                {"atol": float(spec.get("atol", 0.0)), "rtol": float(spec.get("rtol", 0.0))},
            )
        elif kind == "rule":
            rule = load_rule(spec.get("rule", ""))
            try:
                rule(student_value, reference_value, **dict(spec.get("params") or {}))
                problem = None
            except AssertionError as exc:
                problem = f"{key}: {exc}"
        else:
            problem = f"{key}: reference spec has unknown comparison {kind!r}"
    except Exception as exc:  # a rule choking on a malformed student value is that student's failure
        problem = f"{key}: could not be judged ({type(exc).__name__}: {_short(str(exc), 160)})"
    if problem and len(problem) > MAX_MESSAGE:
        problem = problem[: MAX_MESSAGE - 3] + "..."
    return problem


def judge_cell(
    grade_id: str,
    reference: dict[str, dict] | ValueError | None,
    student: dict[str, dict] | ValueError | None,
) -> list[str]:
    """Problems of one graded cell ([] = the judge passes). Every reference key must be recorded and match."""
    if reference is None or isinstance(reference, ValueError) or not reference:
        why = f" ({reference})" if isinstance(reference, ValueError) else ""
        return [f"{grade_id}: the reference run recorded no evidence for this cell{why}: it cannot be judged"]
    if isinstance(student, ValueError):
        return [f"{grade_id}: {student}"]
    student = student or {}
    missing = [key for key in reference if key not in student]
    problems = []
    if missing:  # one message for all of them: the cell stopped before it got there
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        shown = ", ".join(_short(k, 60) for k in missing[:3]) + more
        problems.append(f"no evidence for {shown}: the cell stopped before recording it")
    for key, rec in reference.items():
        if key in missing:
            continue
        p = check(key, rec.get("spec") or {}, student[key].get("value"), rec.get("value"))
        if p:
            problems.append(p)
    return problems


def judge_all(
    reference_dir: Path | str, student_dir: Path | str, grade_ids: list[str]
) -> dict[str, list[str]]:
    """grade_id -> problems for each of ``grade_ids`` (the auto-graded test cells of a notebook)."""
    ref, stu = load_evidence(reference_dir), load_evidence(student_dir)
    return {gid: judge_cell(gid, ref.get(gid), stu.get(gid)) for gid in grade_ids}


# ---- storing ---------------------------------------------------------------------------------------------
def publish(out: Path, evidence: Path, run: dict) -> None:
    """Publish ``evidence`` (a directory of evidence files) as the reference evidence at ``out``, atomically:
    a reader sees no directory or a complete one."""
    staged = out.with_name(out.name + ".staging")
    shutil.rmtree(staged, ignore_errors=True)
    shutil.copytree(evidence, staged)
    (staged / "run.json").write_text(json.dumps(run))
    staged.replace(out)
