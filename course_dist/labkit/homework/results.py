"""What a trainer run left on disk: summary, final parameters, checkpoints, samples seen, fingerprints."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any


def final(run_dir: str | Path) -> dict[str, Any]:
    return json.loads((Path(run_dir) / "final.json").read_text())


def final_params(run_dir: str | Path) -> dict[str, Any]:
    """The run's final parameters. A file the trainer wrote is unpickled only where the student's code runs
    (the student process of a split grading run); the tensors come back as data."""
    from course_dist import student

    if student.active():
        return student.student_side(_load_params, Path(run_dir))
    return _load_params(run_dir)


def _load_params(run_dir: str | Path) -> dict[str, Any]:
    import torch

    return torch.load(Path(run_dir) / "final_params.pt", weights_only=True)


def bitwise_equal(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Names of tensors that differ (empty: bitwise equal)."""
    import torch

    return [k for k in sorted(set(a) | set(b)) if k not in a or k not in b or not torch.equal(a[k], b[k])]


def samples_seen(run_dir: str | Path, epoch: int) -> Counter:
    """How often each sample index of ``epoch`` was trained on, over all ranks and attempts (needs
    --log-samples)."""
    seen: Counter = Counter()
    for path in (Path(run_dir) / "metrics").glob("samples-rank*.jsonl"):
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            if rec["epoch"] == epoch:
                seen.update(rec["idx"])
    return seen


def checkpoint_steps(run_dir: str | Path) -> list[int]:
    """Steps of the folders named ``step-N`` in ``<run_dir>/ckpt``."""
    root = Path(run_dir) / "ckpt"
    return sorted(int(m.group(1)) for p in root.glob("step-*") if (m := re.match(r"step-(\d+)$", p.name)))


def fingerprint(params: dict[str, Any], n: int = 4) -> dict[str, Any]:
    """Small evidence of a state dict: per tensor its float64 sum, sum of squares and first ``n`` elements."""
    import torch

    out: dict[str, Any] = {}
    for k in sorted(params):
        t = params[k].detach().to("cpu", torch.float64).flatten()
        out[k] = {"sum": float(t.sum()), "sq": float((t * t).sum()), "head": t[:n].clone()}
    return out


def load_jsonl(run_dir: str | Path, rank: int = 0, path: str | Path | None = None) -> list[dict[str, Any]]:
    """Records of one rank's metrics JSONL (torn last lines of a killed writer are skipped)."""
    p = Path(path) if path is not None else Path(run_dir) / "metrics" / f"rank-{rank}.jsonl"
    out = []
    for line in p.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out
