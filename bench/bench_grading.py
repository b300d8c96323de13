"""Autograde time per submission, and class throughput with 1 and 2 grading slots on this machine.

    python -m bench grading                          # every lab: reference, untouched release, 3 mutants
    python -m bench grading --quick                  # one mutant per lab
    BENCH_GRADING_LABS=lab02 BENCH_GRADING_ROUNDS=3 python -m bench grading --quick   # 3 rounds, 1 mutant
    BENCH_GRADING_BASE=/path/to/other/checkout python -m bench grading --quick   # ... and by that checkout

Per lab, the same sample submissions are graded with one slot (each time is one submission's, nothing else
competing for the cores) and then with two slots (the class throughput a 2-core box gets). With
``BENCH_GRADING_BASE``, another checkout (a clone at the base commit, with its own ``make venv``: the
sandboxed kernel finds ``course_dist`` through its venv, so a worktree sharing this venv would grade with
this checkout's) grades the same samples with one slot, interleaved with this one, timed the same way: the
before/after of a grader change. Reported per submission: wall seconds from the
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
    """({student: result}, wall seconds of the whole run) graded by ``checkout``'s grader with its own venv
    (a fresh build)."""
    python = checkout / ".venv" / "bin" / "python" if checkout != ROOT else Path(sys.executable)
    with tempfile.TemporaryDirectory(prefix="bench-grading-build-") as build:
        t0 = time.monotonic()
        r = subprocess.run(
            [str(python), "-c", GRADE, str(checkout), str(subs), build, lab, str(seed), str(slots)],
            cwd=checkout,
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


def main(quick: bool = False) -> None:
    from autograder.config import CourseConfig
    from autograder.release import release

    base_env = os.environ.get("BENCH_GRADING_BASE", "")
    base = Path(base_env).resolve() if base_env else None
    if base is not None and not (base / ".venv" / "bin" / "python").exists():
        raise ValueError(
            f"BENCH_GRADING_BASE={base_env!r}: not a checkout with its own venv (run make venv there)"
        )
    rounds = int(os.environ.get("BENCH_GRADING_ROUNDS", "1" if quick else "3"))
    cfg0 = CourseConfig()
    labs = [x for x in os.environ.get("BENCH_GRADING_LABS", "").split(",") if x] or cfg0.lab_ids()

    def rev(where: Path) -> str:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=where, capture_output=True, text=True
        ).stdout.strip()

    head = rev(ROOT)
    tmp = Path(tempfile.mkdtemp(prefix="bench-grading-"))
    cfg = cfg0.with_(build=tmp / "build", labs=tmp / "labs", fast=True)
    release(cfg, labs)
    t0, rows = time.monotonic(), []
    try:
        for lab in labs:
            subs = tmp / "subs" / lab
            kinds = _samples(cfg, lab, subs, 1 if quick else 3)
            runs: list[tuple[str, Path, int]] = []
            for _ in range(rounds):  # interleaved: a load change hits both graders alike
                runs.append((f"this checkout ({head})", ROOT, 1))
                if base is not None:
                    runs.append((f"base ({rev(base)})", base, 1))
            runs.append((f"this checkout ({head})", ROOT, 2))
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
        shutil.rmtree(tmp, ignore_errors=True)
    grouped: dict[tuple, list[dict]] = {}
    for r in rows:
        grouped.setdefault((r["lab"], r["design"], r["slots"]), []).append(r)

    def spread(rs: list[dict], key: str, per: bool = False) -> str:
        xs = sorted(r[key] / max(1, r["n"]) if per else r[key] for r in rs)
        mid = statistics.median(xs)
        return f"{mid:.1f} s" if len(xs) == 1 else f"{mid:.1f} s ({xs[0]:.1f}-{xs[-1]:.1f})"

    lines = [
        "# Autograding: seconds per submission, and class throughput with 1 and 2 slots",
        "",
        f"Measured {machine()}; HEAD {head}; `python -m bench grading{' --quick' if quick else ''}`"
        f"{f' with BENCH_GRADING_BASE (a clone at {rev(base)})' if base else ''} "
        f"({time.monotonic() - t0:.0f} s). Fast mode; {rounds} round(s) of each 1-slot grader, interleaved "
        "(median, min-max), then one 2-slot run. Per submission: the median wall seconds "
        "from the grader's side (mutants: over the sampled ones); overhead = the share of wall time that is "
        "not the kernel executing cells. `wall / submission` = the whole grading run (worker start and the "
        "lab's reference run included) divided by the submissions: what a class costs per student here.",
        "",
        "| lab | grader | slots | reference | untouched | mutant | overhead | wall / submission | scores |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for (lab, design, slots), rs in grouped.items():
        same = all(r["scores"] == o["scores"] for r in rs for o in rows if o["lab"] == lab)
        lines.append(
            f"| {lab} | {design} | {slots} | {spread(rs, 'reference')} | {spread(rs, 'blank')} | "
            f"{spread(rs, 'mutant')} | {statistics.median(r['overhead'] for r in rs):.0%} | "
            f"{spread(rs, 'wall', per=True)} | {'same' if same else 'DIFFER'} |"
        )
    write("grading", "\n".join(lines) + "\n")


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    main(quick="--quick" in sys.argv)
