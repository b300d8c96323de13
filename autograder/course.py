"""``make course`` (``python -m autograder course``): the whole pipeline on the bundled sample submissions.

1. release every lab (labs/ regenerated), 2. build samples per lab under build/samples/: the reference, the
untouched release ("blank") and one per mutant (autograder/mutants/<lab>/) applied to the reference, 3.
autograde
them through nbgrader's real gradebook (build/grades.csv, feedback HTML under build/nbgrader/feedback/),
4. execute every reference notebook headless into build/reference/<lab>/ (full mode unless COURSE_FAST=1),
5. plot build/scores.png and print a per-lab table. Exit status 1 if a reference loses an auto point, the
blank
earns one, a mutant does not lose exactly its own exercise, or a reference notebook raises.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import time
from pathlib import Path

import nbformat
import pandas as pd

from autograder.config import CourseConfig
from autograder.grade import grade
from autograder.mutants import (
    Mutant,
    copy_extras,
    find_mutants,
    mutant_submission,
    reference_submission,
    release_notebook,
)
from autograder.plots import plot_scores
from autograder.release import release, write_notebook
from autograder.rubrics import Rubric, load_rubric

log = logging.getLogger("autograder.course")


def build_samples(cfg: CourseConfig, lab: str, root: Path) -> dict[str, dict]:
    """Write the sample submissions of ``lab`` under ``root``; returns student -> expectation."""
    expect: dict[str, dict] = {}

    def put(student: str, nb: nbformat.NotebookNode, extras: bool, m: Mutant | None = None) -> None:
        d = root / student / lab
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        write_notebook(nb, d / f"{lab}.ipynb")
        if extras:  # files beside the source (a reference package, data) travel as a student's would
            copy_extras(cfg, lab, d, m)

    put("reference", reference_submission(cfg, lab), True)
    expect["reference"] = {"kind": "reference"}
    put("blank", release_notebook(cfg, lab), False)
    expect["blank"] = {"kind": "blank"}
    for m in find_mutants(cfg, lab):
        student = f"mutant-{m.name}"
        try:
            put(student, mutant_submission(cfg, m), True, m)
        except KeyError as exc:
            log.error("%s: mutant %s cannot be applied: %s", lab, m.name, exc)
            expect[student] = {"kind": "broken", "why": str(exc)}
            continue
        expect[student] = {"kind": "mutant", "exercise": m.exercise}
    return expect


def auto_max(rubric: Rubric) -> dict[str, float]:
    return {ex.id: sum(c.points for c in ex.graded_cells if c.kind == "auto") for ex in rubric.exercises}


def verdict(row: pd.Series, expect: dict, rubric: Rubric | None) -> str:
    """'ok' or what is wrong with this sample's row."""
    if expect["kind"] == "broken":
        return f"FAIL: {expect['why']}"
    if row["status"] != "ok":
        return f"FAIL: grading {row['status']}: {row['reason']}"
    if rubric is None:
        return "FAIL: no rubric"
    full = auto_max(rubric)
    got = {ex: float(row.get(ex, 0) or 0) for ex in full}
    if expect["kind"] == "reference":
        bad = [f"{ex} {got[ex]:g}/{full[ex]:g}" for ex in full if got[ex] < full[ex]]
        return "ok" if not bad else "FAIL: reference lost points: " + ", ".join(bad)
    if expect["kind"] == "blank":
        bad = [f"{ex} {got[ex]:g}" for ex in full if got[ex] > 0]
        return "ok" if not bad else "FAIL: untouched release earned points: " + ", ".join(bad)
    target = expect["exercise"]
    if target not in full:
        return f"FAIL: mutant names unknown exercise {target!r}"
    bad = [] if got[target] == 0 else [f"kept {got[target]:g} of its own exercise {target}"]
    bad += [f"lost {full[ex] - got[ex]:g} in {ex}" for ex in full if ex != target and got[ex] < full[ex]]
    return "ok" if not bad else "FAIL: " + "; ".join(bad)


def execute_reference(cfg: CourseConfig, lab: str) -> tuple[Path, list[str]]:
    """Run the instructor notebook headless (full mode unless COURSE_FAST=1); keep it with outputs for
    reviewers."""
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    from autograder.mutants import source_notebook

    dest = cfg.build / "reference" / lab
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    copy_extras(cfg, lab, dest)
    nb = source_notebook(cfg, lab)
    fast = os.environ.get("COURSE_FAST", "0") not in ("", "0")
    env_before = os.environ.get("COURSE_FAST")
    os.environ["COURSE_FAST"] = "1" if fast else "0"
    client = NotebookClient(
        nb,
        timeout=int(cfg.cell_timeout) * (1 if fast else 4),
        allow_errors=True,
        interrupt_on_timeout=True,
        kernel_name="python3",
        resources={"metadata": {"path": str(dest)}},
    )
    errors = []
    try:
        client.execute()
    except DeadKernelError as exc:
        errors.append(f"kernel died: {exc}")
    finally:
        if env_before is None:
            os.environ.pop("COURSE_FAST", None)
        else:
            os.environ["COURSE_FAST"] = env_before
    for i, cell in enumerate(nb.cells):
        for o in cell.get("outputs", []):
            if o.get("output_type") == "error":
                errors.append(f"cell {i} ({cell.get('id')}): {o.get('ename')}: {str(o.get('evalue'))[:160]}")
    nb.metadata["course"]["executed"] = {"fast": fast, "errors": len(errors)}
    nbformat.write(nb, dest / f"{lab}.ipynb")
    return dest / f"{lab}.ipynb", errors


def course(cfg: CourseConfig, labs: list[str] | None = None) -> int:
    t0 = time.monotonic()
    labs = release(cfg, labs)
    if not labs:
        log.error("no labs under %s", cfg.solutions)
        return 1
    samples = cfg.build / "samples"
    expectations: dict[tuple[str, str], dict] = {}
    rubrics: dict[str, Rubric | None] = {}
    for lab in labs:
        rp = cfg.rubric / f"{lab}.yaml"
        rubrics[lab] = load_rubric(rp) if rp.exists() else None
        for student, exp in build_samples(cfg, lab, samples).items():
            expectations[(student, lab)] = exp
    t_grade = time.monotonic()
    out = cfg.build / "grades.csv"
    if out.exists():  # sample rows are regenerated: drop old ones (a deleted mutant), keep any real students
        old = pd.read_csv(out, dtype={"student": str, "lab": str}, keep_default_na=False)
        sample = old["lab"].isin(labs) & (
            old["student"].isin(["reference", "blank"]) | old["student"].str.startswith("mutant-")
        )
        old[~sample].to_csv(out, index=False)
    df = grade(cfg, samples, labs=labs, out=out)
    t_grade = time.monotonic() - t_grade
    df["check"] = [
        verdict(
            row,
            expectations.get((row["student"], row["lab"]), {"kind": "broken", "why": "unexpected"}),
            rubrics.get(row["lab"]),
        )
        for _, row in df.iterrows()
    ]
    df.to_csv(cfg.build / "grades_checked.csv", index=False)
    plot_scores(
        df,
        cfg.build / "scores.png",
        {lab: [e.id for e in r.exercises] for lab, r in rubrics.items() if r is not None},
    )
    failures = int((df["check"] != "ok").sum())
    t_ref = time.monotonic()
    ref_errors: dict[str, list[str]] = {}
    for lab in labs:
        path, errors = execute_reference(cfg, lab)
        ref_errors[lab] = errors
        log.info("reference %s executed -> %s (%d errors)", lab, path, len(errors))
    t_ref = time.monotonic() - t_ref
    out_lines = []
    with pd.option_context("display.max_columns", 60, "display.width", 200, "display.max_colwidth", 70):
        for lab in labs:
            sub = df[df["lab"] == lab].dropna(axis=1, how="all")
            cols = [c for c in sub.columns if c not in ("lab", "reason", "seconds")]
            out_lines.append(f"\n== {lab} ==\n{sub[cols].to_string(index=False)}")
            for e in ref_errors[lab]:
                out_lines.append(f"  reference notebook error: {e}")
            for _, r in sub[sub["check"] != "ok"].iterrows():
                out_lines.append(f"  {r['student']}: {r['check']}  (reason: {r['reason']})")
    total = time.monotonic() - t0
    out_lines.append(
        f"\ngraded {len(df)} samples in {t_grade:.0f} s, executed {len(labs)} reference notebooks in "
        f"{t_ref:.0f} s; make course took {total:.0f} s. Results: {out}, {cfg.build / 'scores.png'}, "
        f"feedback under {cfg.nbgrader_root / 'feedback'}, references under {cfg.build / 'reference'}"
    )
    bad = failures + sum(bool(e) for e in ref_errors.values())
    out_lines.append("make course: OK" if not bad else f"make course: FAILED ({bad} problem(s) above)")
    sys.stdout.write("\n".join(out_lines) + "\n")
    return 0 if not bad else 1
