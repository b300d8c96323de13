"""``make course`` (``python -m autograder course``): prove every lab's grading, in a short main job.

Per lab, and kept cheap as the course grows (one nbgrader run per *sample*, not per mutant):

1. release every lab (labs/ regenerated);
2. a small sample class through real nbgrader (the path students take): per lab the reference (must earn
   every auto point) and the untouched release (must earn none); for ``SAMPLE_MUTANT_LABS`` labs drawn by the
   seed, ``SAMPLE_MUTANTS`` known-wrong answer (must lose exactly its own exercise), graded by the long-lived
   workers of :mod:`autograder.grade`; the reference sample's run is also its lab's reference run (its
   evidence published to the cache: ``grade(trusted=("reference",))``);
3. *every* mutant at the exercise level (:mod:`autograder.mutant_check`: one kernel pass per lab, the mutant's
   cell swapped in, only the cells up to the next exercise re-run; a file mutant in a fresh kernel, set-up and
   its own item only), as jobs in background processes, longest first, two at a time while the sample class
   grades and three after - at the same seed, so each lab is judged against that one reference run;
4. optionally (``--execute-references``) each reference notebook in full mode into build/reference/<lab>/;
5. build/scores.png and a table per lab. Exit status 1 if any expectation fails.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from queue import Empty, Queue

import nbformat
import pandas as pd

from autograder.config import CourseConfig
from autograder.grade import grade
from autograder.mutants import (
    Mutant,
    copy_extras,
    find_checked,
    find_mutants,
    mutant_submission,
    reference_submission,
    release_notebook,
    source_notebook,
)
from autograder.plots import plot_scores
from autograder.release import release, write_notebook
from autograder.rubrics import Rubric, load_rubric
from course_dist.seed import FAST_VAR

log = logging.getLogger("autograder.course")
SAMPLE_MUTANTS = 1  # per sampled lab, graded through nbgrader; all are checked at the exercise level
# Labs whose sampled mutant goes through full nbgrader (drawn by the grading seed). Each costs a full notebook
# run; the exercise-level check already proves every mutant of every lab, so the sample shows the path end to
# end on one lab per run, not on all six every time: on a 2-core box that is CPU-bound (measured: a third
# check lane slowed every job) a second one cost 30-75 s of make course's 15 min (the homework's: 150 s).
SAMPLE_MUTANT_LABS = 1
FILE_BATCH = 4  # file mutants per checking process (each in its own fresh kernel)


def sample_mutants(mutants: list[Mutant], k: int = SAMPLE_MUTANTS) -> list[Mutant]:
    """A deterministic spread of ``k`` mutants (different exercises first) for the nbgrader sample class."""
    by_ex: dict[str, list[Mutant]] = {}
    for m in sorted(mutants, key=lambda m: m.name):
        by_ex.setdefault(m.exercise, []).append(m)
    picked: list[Mutant] = []
    while len(picked) < k and any(by_ex.values()):
        for ms in by_ex.values():
            if ms and len(picked) < k:
                picked.append(ms.pop(0))
    return picked


def build_samples(
    cfg: CourseConfig, lab: str, root: Path, mutants: list[Mutant] | None = None
) -> dict[str, dict]:
    """Write the sample submissions of ``lab`` under ``root`` (reference, blank, ``mutants``, default all);
    returns student -> expectation."""
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
    # an untouched submission holds what a student starts from: the release and, for a package lab, the
    # skeleton the student distribution ships (the homework's homework/), not the notebook alone
    rp = cfg.rubric / f"{lab}.yaml"
    for student_name in (load_rubric(rp).submit_as.values() if rp.exists() else ()):
        skeleton = cfg.root / student_name
        if skeleton.is_dir():
            shutil.copytree(skeleton, root / "blank" / lab / student_name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    expect["blank"] = {"kind": "blank"}
    for m in find_mutants(cfg, lab) if mutants is None else mutants:
        student = f"mutant-{m.name}"
        try:
            put(student, mutant_submission(cfg, m), True, m)
        except KeyError as exc:
            log.error("%s: mutant %s cannot be applied: %s", lab, m.name, exc)
            expect[student] = {"kind": "broken", "why": str(exc)}
            continue
        expect[student] = {"kind": "mutant", "exercise": m.exercise, "keeps": _kept_before(cfg, lab, m)}
    return expect


def _kept_before(cfg: CourseConfig, lab: str, m: Mutant) -> float:
    """Points of the mutant's own exercise that it cannot cost: its auto test cells placed *before* the answer
    cell it replaces (lab03's card shares an exercise with the checkpoint, whose tests run first). The same
    rule as the exercise-level check, which runs a mutant from its answer cell onwards."""
    from autograder.source import grade_id

    if m.is_file_mutant:
        return 0.0
    try:
        ex = load_rubric(cfg.rubric / f"{lab}.yaml").exercise(m.exercise)
    except (KeyError, FileNotFoundError):
        return 0.0
    pos = {grade_id(c): i for i, c in enumerate(source_notebook(cfg, lab).cells) if grade_id(c)}
    at = pos.get(m.replaces)
    if at is None:
        return 0.0
    return float(sum(c.points for c in ex.graded_cells if c.kind == "auto" and pos.get(c.grade_id, at) < at))


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
    keeps = float(expect.get("keeps", 0.0))
    bad = (
        []
        if got[target] == keeps
        else [
            f"kept {got[target]:g} of its own exercise {target}"
            + (f" (expected {keeps:g}: its tests before the answer it replaces)" if keeps else "")
        ]
    )
    bad += [f"lost {full[ex] - got[ex]:g} in {ex}" for ex in full if ex != target and got[ex] < full[ex]]
    return "ok" if not bad else "FAIL: " + "; ".join(bad)


def execute_reference(cfg: CourseConfig, lab: str) -> tuple[Path, list[str]]:
    """Run the instructor notebook headless (full mode unless COURSE_FAST=1); keep it with outputs for
    reviewers."""
    from nbclient.exceptions import DeadKernelError

    from autograder.kernel import plain_client
    from autograder.mutants import source_notebook
    from course_dist.seed import fast_mode

    dest = cfg.build / "reference" / lab
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    copy_extras(cfg, lab, dest)
    nb = source_notebook(cfg, lab)
    fast = fast_mode()
    client = plain_client(cfg, nb, dest, fast=fast, timeout=int(cfg.cell_timeout) * (1 if fast else 4))
    errors = []
    try:
        client.execute()
    except DeadKernelError as exc:
        errors.append(f"kernel died: {exc}")
    for i, cell in enumerate(nb.cells):
        for o in cell.get("outputs", []):
            if o.get("output_type") == "error":
                errors.append(f"cell {i} ({cell.get('id')}): {o.get('ename')}: {str(o.get('evalue'))[:160]}")
    nb.metadata["course"]["executed"] = {"fast": fast, "errors": len(errors)}
    nbformat.write(nb, dest / f"{lab}.ipynb")
    return dest / f"{lab}.ipynb", errors


def _mutant_check(
    cfg: CourseConfig,
    lab: str,
    out: Path,
    seed: int = 0,
    file_mutants: bool = True,
    names: list[str] | None = None,
    collateral: bool = True,
    next_exercise: bool = True,
) -> dict[str, list[str]]:
    """Mutants of ``lab`` at the exercise level, in a process of their own (own kernel, own environment):
    all of them, or only ``names``.

    ``file_mutants=False`` leaves out the mutants that replace a module (the homework's): each needs a fresh
    kernel running the notebook through its own item (up to a minute and a half apiece), so the test suite
    skips them and ``make course`` / ``python -m autograder mutants --lab homework`` checks them.
    """
    from autograder.grade import _config_json

    spec = out.with_suffix(".config.json")
    spec.write_text(json.dumps({**_config_json(cfg), "fast": True}))
    wanted = None if names is None else sorted(names)
    code = (
        # dies with its lane (autograder.procs.die_with_parent): a lone SIGTERM to the grader, which its
        # process group does not get, would otherwise leave the check running until its next write
        "from autograder.procs import die_with_parent; die_with_parent(); "
        "import json, sys; from autograder.config import CourseConfig; "
        "from autograder.mutant_check import check_lab_mutants; "
        f"cfg = CourseConfig(**json.load(open({str(spec)!r}))); "
        "from autograder.mutants import find_checked; "
        f"ms = [m for m in find_checked(cfg, {lab!r}) if ({bool(file_mutants)} or not m.is_file_mutant) "
        f"and ({wanted!r} is None or m.name in {wanted!r})]; "
        f"json.dump(check_lab_mutants(cfg, {lab!r}, ms, seed={int(seed)}, collateral={bool(collateral)}, "
        f"next_exercise={bool(next_exercise)}), "
        f"open({str(out)!r}, 'w'))"
    )
    env = {**os.environ, FAST_VAR: "1"}
    count = len(find_checked(cfg, lab)) if names is None else len(names)
    r = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        # a file mutant (the homework's) runs in a fresh kernel of its own: the cap grows with the count
        timeout=cfg.notebook_timeout * (2 + count),
    )
    if r.returncode != 0 or not out.exists():
        what = lab if names is None else f"{lab} {', '.join(sorted(names))}"
        tail = r.stderr.strip()[-400:]
        return {"<mutant check>": [f"mutant check of {what} exited {r.returncode}: {tail}"]}
    return json.loads(out.read_text())


def _check_jobs(cfg: CourseConfig, labs: list[str], file_mutants: bool) -> list[tuple[str, list[str] | None]]:
    """The exercise-level checks as jobs, longest first (so the short ones fill the lanes at the end): one
    walk per lab over its cell mutants, then the file mutants in batches of ``FILE_BATCH`` (each in a fresh
    kernel; all of the homework's 44 in one job would be as long as all the labs' walks together), the latest
    item first."""
    walks, files = [], []
    for lab in labs:
        ms = find_checked(cfg, lab)
        cells = [m for m in ms if not m.is_file_mutant]
        fm = [m for m in ms if m.is_file_mutant] if file_mutants else []
        if cells or not fm:
            walks.append((len(cells), lab, [m.name for m in cells] if fm else None))
        if fm:
            rp = cfg.rubric / f"{lab}.yaml"
            order = [e.id for e in load_rubric(rp).exercises] if rp.exists() else []
            rank = {e: i for i, e in enumerate(order)}
            files += [(rank.get(m.exercise, len(order)), m.name, lab) for m in fm]
    jobs: list[tuple[str, list[str] | None]] = [(lab, names) for _, lab, names in sorted(walks, reverse=True)]
    # File mutants in batches of FILE_BATCH of one lab, each still in a fresh kernel: a batch shares one
    # checking process (its start-up, the grader's imports, was a good part of a homework mutant's ~5.5 CPU-s)
    ordered = [(lab, name) for _, name, lab in sorted(files, reverse=True)]
    while ordered:
        lab = ordered[0][0]
        batch = [n for lb, n in ordered if lb == lab][:FILE_BATCH]
        jobs.append((lab, batch))
        ordered = [(lb, n) for lb, n in ordered if not (lb == lab and n in batch)]
    return jobs


def grade_with_mutant_checks(
    cfg: CourseConfig,
    samples: Path,
    labs: list[str],
    *,
    out: Path,
    unsafe_no_sandbox: bool = False,
    seed: int | None = None,
    progress: bool = True,
    file_mutants: bool = True,
    mutant_labs_at_once: int = 2,
    file_collateral: bool = True,
    trusted: tuple[str, ...] = (),
    lanes_after_grading: int | None = None,
    next_exercise: bool = True,
) -> tuple[pd.DataFrame, dict[str, dict[str, list[str]]]]:
    """Grade the sample class through nbgrader and, meanwhile, every mutant of ``labs`` at the exercise level.

    Returns (the samples' rows, lab -> mutant -> problems). The exercise-level checks run beside the sample
    class, ``mutant_labs_at_once`` jobs at a time (:func:`_check_jobs`): a distributed cell mostly waits
    (process start, rendezvous, collectives), so more kernels on 2 cores fill those gaps instead of adding
    their whole time to the job's. ``seed`` is the grading seed; the checks use the same one, so the reference
    evidence each lab is judged against is computed once and shared (None: a fresh one, drawn here).
    ``file_collateral=False`` checks each file mutant on its own item's cells only
    (:func:`autograder.mutant_check.check_mutant`); ``trusted`` names the reference sample, whose graded run
    is then also each lab's reference run (:func:`autograder.grade.grade`). ``lanes_after_grading``: check
    jobs at once once the sample class is graded (default: no change). ``next_exercise=False``: each cell
    mutant's check stops after its own exercise (:func:`autograder.mutant_check.check_lab_mutants`).
    """
    import secrets

    seed = secrets.randbelow(2**31) if seed is None else seed
    checks_dir = cfg.build / "mutant_checks"
    checks_dir.mkdir(parents=True, exist_ok=True)
    jobs = _check_jobs(cfg, labs, file_mutants)
    file_names = {m.name for lab in labs for m in find_checked(cfg, lab) if m.is_file_mutant}

    def result_file(lab: str, names: list[str] | None) -> Path:
        if names is None:
            return checks_dir / f"{lab}.json"
        more = f"+{len(names) - 1}" if len(names) > 1 else ""
        return checks_dir / f"{lab}.{names[0]}{more}.json"

    lanes_after = max(mutant_labs_at_once, lanes_after_grading or 0)
    # Lanes take jobs from one queue in its order: longest first only holds if no lane can jump the queue
    # (a lane that just finished must not take its own next job ahead of a waiting one).
    queue: Queue = Queue()
    for i, (lab, names) in enumerate(jobs):
        queue.put((i, lab, names))
    found: dict[int, tuple[str, dict[str, list[str]]]] = {}

    def lane() -> None:
        while True:
            try:
                key, lab, names = queue.get_nowait()
            except Empty:
                return
            t0 = time.monotonic()
            try:
                found[key] = (
                    lab,
                    _mutant_check(
                        cfg,
                        lab,
                        result_file(lab, names),
                        seed,
                        file_mutants,
                        names,
                        file_collateral,
                        next_exercise,
                    ),
                )
                walk = not names or not set(names) <= file_names
                what = "walk over its cell mutants" if walk else ", ".join(names)
                log.info("mutant check %s %s: %.0f s", lab, what, time.monotonic() - t0)
            except Exception as exc:  # a grader bug: the mutants of this job fail their check, loudly
                log.exception("mutant check of %s %s failed", lab, names or "")
                found[key] = (lab, {"<mutant check>": [f"mutant check of {lab} raised {exc!r}"]})

    lanes = [threading.Thread(target=lane, daemon=True) for _ in range(mutant_labs_at_once)]
    for t in lanes:
        t.start()
    graded = False
    try:
        df = grade(
            cfg,
            samples,
            labs=labs,
            out=out,
            force=True,
            seed=seed,
            progress=progress,
            unsafe_no_sandbox=unsafe_no_sandbox,
            trusted=trusted,
        )
        graded = True
    finally:
        if graded:
            for _ in range(lanes_after - mutant_labs_at_once):  # the grading slots' cores are free now
                lanes.append(threading.Thread(target=lane, daemon=True))
                lanes[-1].start()
        else:  # Ctrl-C or a grader bug: the lanes finish the job they hold and take no new one
            while True:
                try:
                    queue.get_nowait()
                except Empty:
                    break
        for t in lanes:
            t.join()
    results: dict[str, dict[str, list[str]]] = {lab: {} for lab in labs}
    for key in sorted(found):
        lab, res = found[key]
        results[lab].update(res)
    missing = [jobs[i] for i in range(len(jobs)) if i not in found]
    for lab, names in missing:  # never a silent pass: a job no lane finished fails its lab's check
        results[lab]["<mutant check>"] = [f"mutant check of {lab} {names or ''} did not run"]
    return df, results


def course(
    cfg: CourseConfig,
    labs: list[str] | None = None,
    *,
    execute_references: bool = False,
    unsafe_no_sandbox: bool = False,
    seed: int | None = None,
) -> int:
    import random
    import secrets

    t0 = time.monotonic()
    labs = release(cfg, labs)
    if not labs:
        log.error("no labs under %s", cfg.solutions)
        return 1
    # one seed for the sample class AND the exercise-level checks: each lab's reference evidence is then
    # computed once (it was twice, one run per seed); logged, so `--seed` reproduces a run
    seed = secrets.randbelow(2**31) if seed is None else seed
    with_mutants = [lab for lab in labs if find_mutants(cfg, lab)]
    sampled = set(random.Random(seed).sample(with_mutants, min(SAMPLE_MUTANT_LABS, len(with_mutants))))
    log.info("make course: grading seed %d; sampled mutants through nbgrader for %s", seed, sorted(sampled))
    samples = cfg.build / "samples"
    if samples.exists():
        shutil.rmtree(samples)  # a deleted mutant must not linger as a sample
    expectations: dict[tuple[str, str], dict] = {}
    rubrics: dict[str, Rubric | None] = {}
    for lab in labs:
        rp = cfg.rubric / f"{lab}.yaml"
        rubrics[lab] = load_rubric(rp) if rp.exists() else None
        picked = sample_mutants(find_mutants(cfg, lab)) if lab in sampled else []
        for student, exp in build_samples(cfg, lab, samples, picked).items():
            expectations[(student, lab)] = exp
    out = cfg.build / "grades.csv"
    if out.exists():  # sample rows are regenerated: drop old ones (a deleted mutant), keep any real students
        old = pd.read_csv(out, dtype={"student": str, "lab": str}, keep_default_na=False)
        sample = old["lab"].isin(labs) & (
            old["student"].isin(["reference", "blank"]) | old["student"].str.startswith("mutant-")
        )
        old[~sample].to_csv(out, index=False)
    t_grade = time.monotonic()
    df, mutant_problems = grade_with_mutant_checks(
        cfg,
        samples,
        labs,
        out=out,
        unsafe_no_sandbox=unsafe_no_sandbox,
        seed=seed,
        file_collateral=False,
        trusted=("reference",),
        # 3 kernels on 2 cores once the two grading slots are done: the last jobs are the homework's drills,
        # which wait on processes and signals a good part of their time
        lanes_after_grading=3,
    )
    t_grade = time.monotonic() - t_grade
    t_checks = time.monotonic() - t0
    df["check"] = [
        verdict(
            row,
            expectations.get((row["student"], row["lab"]), {"kind": "broken", "why": "unexpected"}),
            rubrics.get(row["lab"]),
        )
        for _, row in df.iterrows()
    ]
    df.to_csv(cfg.build / "grades_checked.csv", index=False)
    mrows = [
        {"lab": lab, "mutant": name, "check": "ok" if not probs else "FAIL: " + "; ".join(probs)}
        for lab, res in mutant_problems.items()
        for name, probs in sorted(res.items())
    ]
    mdf = pd.DataFrame(mrows, columns=["lab", "mutant", "check"])
    mdf.to_csv(cfg.build / "mutants_checked.csv", index=False)
    plot_scores(
        df,
        cfg.build / "scores.png",
        {lab: [e.id for e in r.exercises] for lab, r in rubrics.items() if r is not None},
    )
    failures = int((df["check"] != "ok").sum()) + int((mdf["check"] != "ok").sum())
    ref_errors: dict[str, list[str]] = {lab: [] for lab in labs}
    t_ref = 0.0
    if execute_references:
        t_ref = time.monotonic()
        for lab in labs:
            path, ref_errors[lab] = execute_reference(cfg, lab)
            log.info("reference %s executed -> %s (%d errors)", lab, path, len(ref_errors[lab]))
        t_ref = time.monotonic() - t_ref
    out_lines = []
    with pd.option_context("display.max_columns", 60, "display.width", 200, "display.max_colwidth", 70):
        for lab in labs:
            sub = df[df["lab"] == lab].dropna(axis=1, how="all")
            cols = [c for c in sub.columns if c not in ("lab", "reason", "seconds")]
            mine = mdf[mdf["lab"] == lab]
            out_lines.append(
                f"\n== {lab} ==\n{sub[cols].to_string(index=False)}\n"
                f"mutants at the exercise level: {int((mine['check'] == 'ok').sum())}/{len(mine)} ok"
            )
            for e in ref_errors[lab]:
                out_lines.append(f"  reference notebook error: {e}")
            for _, r in sub[sub["check"] != "ok"].iterrows():
                out_lines.append(f"  {r['student']}: {r['check']}  (reason: {r['reason']})")
            for _, r in mine[mine["check"] != "ok"].iterrows():
                out_lines.append(f"  mutant {r['mutant']}: {r['check']}")
    total = time.monotonic() - t0
    out_lines.append(
        f"\ngraded {len(df)} samples through nbgrader in {t_grade:.0f} s, checked {len(mdf)} mutants at the "
        f"exercise level (both done {t_checks:.0f} s after the start)"
        + (f", executed {len(labs)} references in full mode in {t_ref:.0f} s" if execute_references else "")
        + f"; make course took {total:.0f} s. Results: {out}, {cfg.build / 'mutants_checked.csv'}, "
        f"{cfg.build / 'scores.png'}, feedback under {cfg.nbgrader_root / 'feedback'}"
    )
    bad = failures + sum(bool(e) for e in ref_errors.values())
    out_lines.append("make course: OK" if not bad else f"make course: FAILED ({bad} problem(s) above)")
    sys.stdout.write("\n".join(out_lines) + "\n")
    return 0 if not bad else 1
