"""Autograde time per submission, before (one fresh grading process per submission) and after (long-lived
workers), side by side in one run, and the wall time projected for a class.

    python -m bench grading            # every lab: reference, untouched release, 3 mutants; both designs
    python -m bench grading --quick    # one mutant per lab
    BENCH_GRADING_LABS=lab02,lab04 python -m bench grading

Per lab, the same sample submissions are graded twice with one grading slot (so submissions never
compete for the 2 cores and each time is one submission's): ``before`` starts
``python -m autograder.worker spec.json`` per submission (nbgrader imported and its apps built each
time: the old design); ``after`` sends every submission to one long-lived ``--serve`` worker. Reported
per submission: wall seconds from the grader's side, and the *overhead share*: everything that is not
the kernel executing the student's cells (nbclient's per-cell timing) - process start, nbgrader's
imports and preprocessors, kernel start, gradebook, feedback.
Writes bench/results/grading.md.
"""

from __future__ import annotations

import logging
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from bench import machine, write

log = logging.getLogger("bench.grading")
CLASS = 200  # students in the projected class


def _samples(cfg, lab: str, root: Path, n_mutants: int) -> dict[str, str]:  # noqa: ANN001
    from autograder.course import build_samples, sample_mutants
    from autograder.mutants import find_mutants

    picked = sample_mutants(find_mutants(cfg, lab), n_mutants)
    exp = build_samples(cfg, lab, root, picked)
    return {s: e["kind"] for s, e in exp.items() if e["kind"] != "broken"}


def _grade(cfg, subs: Path, lab: str, one_shot: bool, seed: int) -> dict[str, dict]:  # noqa: ANN001
    """student -> {seconds, exec_s, status} for one design, graded serially (one slot)."""
    import json

    from autograder.grade import grade

    out = cfg.build / f"bench-{'before' if one_shot else 'after'}.csv"
    df = grade(
        cfg.with_(workers=1),
        subs,
        labs=[lab],
        out=out,
        force=True,
        progress=False,
        seed=seed,
        one_shot=one_shot,
    )
    ready = cfg.build / "grading" / "all" / "worker-0.ready"  # the slot's one-time start (serve mode only)
    res: dict = {"<start>": float(ready.read_text()) if ready.exists() and not one_shot else float("nan")}
    ready.unlink(missing_ok=True)
    for _, row in df.iterrows():
        full = json.loads(
            (cfg.nbgrader_root / "feedback" / row["student"] / lab / "grading.json").read_text()
        )
        res[row["student"]] = {
            "seconds": float(full["seconds"]),
            "exec_s": float(full["timings"].get("exec_s", 0.0)),
            "status": row["status"],
            "score": float(row["score"]),
            "timings": full["timings"],
        }
    return res


def _med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def bench_lab(cfg, lab: str, n_mutants: int, seed: int) -> dict:  # noqa: ANN001
    with tempfile.TemporaryDirectory(prefix=f"bench-grading-{lab}-") as tmp:
        kinds = _samples(cfg, lab, Path(tmp), n_mutants)
        t0 = time.monotonic()
        try:  # the reference run (once per lab and seed, cached): outside both designs' per-submission times
            from autograder.reference import reference_evidence

            reference_evidence(cfg, lab, seed, True)
        except ImportError:
            pass
        ref_s = time.monotonic() - t0
        before = _grade(cfg, Path(tmp), lab, True, seed)
        after = _grade(cfg, Path(tmp), lab, False, seed)
    before.pop("<start>")
    row: dict = {"lab": lab, "reference run": ref_s, "worker start": after.pop("<start>")}
    for design, res in (("before", before), ("after", after)):
        for kind in ("reference", "blank", "mutant"):
            secs = [r["seconds"] for s, r in res.items() if kinds.get(s) == kind]
            row[f"{design} {kind}"] = _med(secs)
        tot = sum(r["seconds"] for r in res.values())
        exe = sum(r["exec_s"] for r in res.values())
        row[f"{design} overhead"] = 1 - exe / tot if tot else float("nan")
        row[f"{design} mean"] = tot / max(1, len(res))
    row["detail"] = [
        (design, s, r["seconds"], r["timings"])
        for design, res in (("before", before), ("after", after))
        for s, r in sorted(res.items())
    ]
    row["same scores"] = all(before[s]["score"] == after[s]["score"] for s in before if s in after)
    return row


def _fmt(v: float) -> str:
    return f"{v:.1f} s"


def main(quick: bool = False) -> None:
    from autograder.config import CourseConfig

    labs_env = os.environ.get("BENCH_GRADING_LABS", "")
    base = CourseConfig()
    labs = [x for x in labs_env.split(",") if x] or base.lab_ids()
    tmp = Path(tempfile.mkdtemp(prefix="bench-grading-build-"))
    cfg = base.with_(build=tmp / "build", labs=tmp / "labs", fast=True)
    from autograder.release import release

    t0 = time.monotonic()
    release(cfg, labs)
    rows = []
    for lab in labs:
        log.info("grading %s: before and after", lab)
        rows.append(bench_lab(cfg, lab, 1 if quick else 3, seed=1234))
    shutil.rmtree(tmp, ignore_errors=True)
    lines = [
        "# Autograding: per-submission time before/after long-lived workers, and a class projected",
        "",
        f"Measured {machine()}; `python -m bench grading{' --quick' if quick else ''}` "
        f"({time.monotonic() - t0:.0f} s). Fast mode, one grading slot, the same samples graded by both "
        "designs in one run: **before** = a fresh `python -m autograder.worker spec.json` per submission "
        "(the old design), **after** = one long-lived worker (`--serve`) grading them all. Times are "
        "medians per submission (mutants: median over the sampled mutants); overhead = share of the "
        "submission's wall time that is not the kernel executing cells. Once per run, outside every "
        "submission's time: the reference run (once per lab) and, after, the slot's worker start (nbgrader's "
        "imports, paid before the slot takes its first submission).",
        "",
        "| lab | reference before | reference after | untouched before | untouched after | mutant before "
        "| mutant after | overhead before | overhead after | same scores | reference run (once per lab) "
        "| worker start (once per slot) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['lab']} | {_fmt(r['before reference'])} | {_fmt(r['after reference'])} | "
            f"{_fmt(r['before blank'])} | {_fmt(r['after blank'])} | {_fmt(r['before mutant'])} | "
            f"{_fmt(r['after mutant'])} | {r['before overhead']:.0%} | {r['after overhead']:.0%} | "
            f"{'yes' if r['same scores'] else 'NO'} | {_fmt(r['reference run'])} | "
            f"{_fmt(r['worker start'])} |"
        )
    lines += [
        "",
        "Per submission (seconds): wall from the grader's side; inside the worker: nbgrader autograde "
        "(of which "
        "the kernel executing cells) and feedback.",
        "",
        "| lab | design | sample | wall | autograde | executing cells | feedback |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        for design, student, wall, t in r["detail"]:
            lines.append(
                f"| {r['lab']} | {design} | {student} | {wall:.1f} | {t.get('autograde_s', 0):.1f} | "
                f"{t.get('exec_s', 0):.1f} | {t.get('feedback_s', 0):.1f} |"
            )
    per_student = sum(r["after reference"] for r in rows)  # a student who does the work: reference-like
    lines += [
        "",
        f"Projection for {CLASS} students x {len(rows)} labs (after; a student who does the work is graded "
        f"like the reference: {per_student:.0f} s of one slot per student for these labs):",
        "",
        "| machines | slots | wall time |",
        "|---|---|---|",
    ]
    # 2 slots per 2-core box: a distributed cell mostly waits (process start, rendezvous), so two submissions
    # share 2 cores well; more slots than cores/1 only queue on the CPU.
    for nodes, cores in ((1, 2), (4, 16), (16, 16)):
        slots = max(1, cores // 1) if cores == 2 else cores // 2
        wall = -(-CLASS // nodes) * per_student / slots
        lines.append(f"| {nodes} x {cores} cores | {slots} per machine | {wall / 3600:.1f} h |")
    lines += [
        "",
        "Slots per machine: 2 on a 2-core box; cores/2 on a cluster node (a fast-mode lab runs world "
        "size <= 3, about 2 busy cores per submission). Wall time = ceil(students / machines) x "
        "per-student seconds / slots; it assumes slots do not slow each other down (measure with "
        "`grade --workers` on the target machine).",
    ]
    write("grading", "\n".join(lines) + "\n")
