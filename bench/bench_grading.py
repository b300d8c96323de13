"""Autograde time per submission, and class throughput with 1 and 2 grading slots on this machine.

    python -m bench grading                          # every lab: reference, untouched release, 3 mutants
    python -m bench grading --quick                  # one mutant per lab
    BENCH_GRADING_LABS=lab02 python -m bench grading
    BENCH_GRADING_BASE=<commit> python -m bench grading --quick   # the same samples graded by <commit> too

Per lab, the same sample submissions are graded with one slot (each time is one submission's, nothing else
competing for the cores) and then with two slots (the class throughput a 2-core box gets). With
``BENCH_GRADING_BASE``, a git worktree of that commit grades the same samples with one slot, in the same run,
timed the same way: the before/after of a grader change. Reported per submission: wall seconds from the
grader's side, and the *overhead share* (everything that is not the kernel executing the student's cells).
Writes bench/results/grading.md.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import machine, write

log = logging.getLogger("bench.grading")
ROOT = Path(__file__).resolve().parents[1]
KINDS = ("reference", "blank", "mutant")

# Runs in the checkout given as argv[1] (its own autograder on sys.path first): grade SUBS with one slot and
# print {student: {seconds, exec_s, score}} as JSON.
GRADE = r"""
import json, sys
from pathlib import Path
from autograder.config import CourseConfig
from autograder.grade import grade
root, subs, build, lab = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
seed, slots = int(sys.argv[5]), int(sys.argv[6])
cfg = CourseConfig(root=Path(root)).with_(build=build, labs=build / "labs", fast=True, workers=slots)
from autograder.release import release
release(cfg, [lab])
df = grade(cfg, subs, labs=[lab], out=build / "bench.csv", force=True, progress=False, seed=seed)
res = {}
for _, row in df.iterrows():
    g = json.loads((cfg.nbgrader_root / "feedback" / row["student"] / lab / "grading.json").read_text())
    res[row["student"]] = {"seconds": float(g["seconds"]), "exec_s": float(g["timings"].get("exec_s", 0.0)),
                           "score": float(row["score"])}
print("RESULT " + json.dumps(res))
"""


def _samples(cfg, lab: str, root: Path, n_mutants: int) -> dict[str, str]:  # noqa: ANN001
    from autograder.course import build_samples, sample_mutants
    from autograder.mutants import find_mutants

    picked = sample_mutants(find_mutants(cfg, lab), n_mutants)
    exp = build_samples(cfg, lab, root, picked)
    return {s: e["kind"] for s, e in exp.items() if e["kind"] != "broken"}


def _grade(checkout: Path, subs: Path, lab: str, seed: int, slots: int) -> tuple[dict, float]:
    """({student: result}, wall seconds of the whole run) graded by ``checkout``'s grader (a fresh build)."""
    with tempfile.TemporaryDirectory(prefix="bench-grading-build-") as build:
        env = {**os.environ, "PYTHONPATH": str(checkout)}  # before the venv's .pth entry for this checkout
        t0 = time.monotonic()
        r = subprocess.run(
            [sys.executable, "-c", GRADE, str(checkout), str(subs), build, lab, str(seed), str(slots)],
            cwd=checkout,
            env=env,
            capture_output=True,
            text=True,
        )
        wall = time.monotonic() - t0
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if r.returncode != 0 or line is None:
        raise RuntimeError(f"grading {lab} with {checkout} failed ({r.returncode}): {r.stderr[-800:]}")
    return json.loads(line[len("RESULT ") :]), wall


def _summary(res: dict, kinds: dict[str, str]) -> dict:
    row = {
        k: statistics.median([r["seconds"] for s, r in res.items() if kinds.get(s) == k] or [float("nan")])
        for k in KINDS
    }
    tot = sum(r["seconds"] for r in res.values())
    row["overhead"] = 1 - sum(r["exec_s"] for r in res.values()) / tot if tot else float("nan")
    return row


def _worktree(commit: str, where: Path) -> Path:
    subprocess.run(
        ["git", "worktree", "add", "--detach", "-f", str(where), commit],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    return where


def main(quick: bool = False) -> None:
    from autograder.config import CourseConfig
    from autograder.release import release

    base_commit = os.environ.get("BENCH_GRADING_BASE", "")
    cfg0 = CourseConfig()
    labs = [x for x in os.environ.get("BENCH_GRADING_LABS", "").split(",") if x] or cfg0.lab_ids()
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    tmp = Path(tempfile.mkdtemp(prefix="bench-grading-"))
    cfg = cfg0.with_(build=tmp / "build", labs=tmp / "labs", fast=True)
    release(cfg, labs)
    base = _worktree(base_commit, tmp / "base") if base_commit else None
    t0, rows = time.monotonic(), []
    try:
        for lab in labs:
            subs = tmp / "subs" / lab
            kinds = _samples(cfg, lab, subs, 1 if quick else 3)
            runs = [("this commit", ROOT, 1), ("this commit", ROOT, 2)]
            if base is not None:
                runs.insert(1, (f"base {base_commit[:10]}", base, 1))
            for design, checkout, slots in runs:
                log.info("grading %s: %s, %d slot(s)", lab, design, slots)
                res, wall = _grade(checkout, subs, lab, 1234, slots)
                rows.append(
                    {
                        "lab": lab,
                        "design": design,
                        "slots": slots,
                        "n": len(res),
                        "wall": wall,
                        "scores": {s: r["score"] for s, r in res.items()},
                        **_summary(res, kinds),
                    }
                )
    finally:
        if base is not None:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    lines = [
        "# Autograding: seconds per submission, and class throughput with 1 and 2 slots",
        "",
        f"Measured {machine()}; HEAD {head}; `python -m bench grading{' --quick' if quick else ''}`"
        f"{f' with BENCH_GRADING_BASE={base_commit}' if base_commit else ''} "
        f"({time.monotonic() - t0:.0f} s). Fast mode, one run. Per submission: the median wall seconds "
        "from the grader's side (mutants: over the sampled ones); overhead = the share of wall time that is "
        "not the kernel executing cells. `wall / submission` = the whole grading run (worker start and the "
        "lab's reference run included) divided by the submissions: what a class costs per student here.",
        "",
        "| lab | grader | slots | reference | untouched | mutant | overhead | wall / submission | scores |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        same = all(r["scores"] == o["scores"] for o in rows if o["lab"] == r["lab"])
        lines.append(
            f"| {r['lab']} | {r['design']} | {r['slots']} | {r['reference']:.1f} s | {r['blank']:.1f} s | "
            f"{r['mutant']:.1f} s | {r['overhead']:.0%} | {r['wall'] / max(1, r['n']):.1f} s | "
            f"{'same' if same else 'DIFFER'} |"
        )
    write("grading", "\n".join(lines) + "\n")


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    main(quick="--quick" in sys.argv)
