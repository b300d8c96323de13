"""``python -m autograder grade SUBMISSIONS``: autograde every student x lab, safely, in parallel, resumably.

Layout read: ``SUBMISSIONS/<student>/<lab>/<lab>.ipynb`` (see :mod:`autograder.shard`; every student folder
gets a row, a misplaced notebook a reason naming what was found and what was expected). ``--workers`` slots
each hold one long-lived grading worker (:mod:`autograder.worker`); each submission runs in its own kernel
(sandboxed), against its own gradebook copy, under its own wall-clock cap, so a notebook that loops, hangs a
process group, segfaults a rank or kills its kernel costs that one row and nothing else.

Nothing is lost: as each submission finishes, its CSV row (``build/grades.csv``), its gradebook entry
(``build/nbgrader/gradebook.db``) and its full messages
(``build/nbgrader/feedback/<student>/<lab>/grading.json``) are written atomically. A re-run, with the seed
recorded in ``grades.run.json``, grades the (student, lab) rows missing from the CSV and those whose status is
``missing`` or ``error``, and keeps the rest; ``--student NAME`` regrades that student's rows, ``--force``
everything.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import shutil
import sys
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from queue import Empty, Queue

import pandas as pd

from autograder.config import CourseConfig
from autograder.merge import BASE_COLUMNS, TAIL_COLUMNS, read_csv, run_file, write_csv, write_json
from autograder.outcome import Outcome, outcome_from_result, outcome_row, source_cells
from autograder.procs import TOKEN_VAR
from autograder.shard import Submission, find_submissions

__all__ = ["BASE_COLUMNS", "TAIL_COLUMNS", "Outcome", "grade", "write_csv"]
log = logging.getLogger("autograder.grade")
REGRADED = ("missing", "error")  # statuses a plain rerun grades again (ok and timeout rows are kept)


@dataclass
class Run:
    """Where one grading run writes, and what it grades with (shared by every slot)."""

    cfg: CourseConfig
    out: Path
    gradebook: Path
    work: Path  # scratch: one folder per submission, the template gradebook, worker logs
    seed: int
    feedback: bool
    sandbox: bool
    titles: dict[str, dict[str, str]] = field(default_factory=dict)  # lab -> grade_id -> exercise title
    trusted: frozenset[str] = frozenset()  # students whose submission IS the course reference (make course)
    cleared: frozenset[str] = (
        frozenset()
    )  # students whose tamper findings the instructor reviewed and cleared
    lock: threading.Lock = field(default_factory=threading.Lock)


def _config_json(cfg: CourseConfig) -> dict:
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(cfg).items()}


def _sandbox_ok(unsafe: bool) -> bool:
    """True when kernels will be sandboxed; raises when they cannot be and the instructor did not opt out."""
    if unsafe:
        log.warning("--unsafe-no-sandbox: student notebooks run with this user's rights, unconfined")
        return False
    from autograder.sandbox import sandbox_available

    why = sandbox_available()
    if why:
        raise RuntimeError(f"cannot grade safely: {why}")
    return True


# ---- one submission ----------------------------------------------------------------------------------------
def _spec(run: Run, sub: Submission, work: Path, token: str) -> dict:
    cfg = run.cfg
    env = {**cfg.kernel_environ(), TOKEN_VAR: token, "COURSE_GRADE_SEED": str(run.seed)}
    spec = {
        "config": _config_json(cfg),
        "student": sub.student,
        "lab": sub.lab,
        "db": str(work / "gradebook.db"),
        "submitted": str(sub.notebook.parent.parent.parent.resolve()),
        "result": str(work / "result.json"),
        "feedback": run.feedback,
        "env": env,
        "seed": run.seed,
        "titles": run.titles.get(sub.lab, {}),
        "evidence_dir": str(work / "evidence"),
        # computed by the worker on first use (cached, locked): slots start on different labs, so the
        # reference runs of a class proceed in parallel instead of before any grading
        "reference_evidence": None,
        # the course's own reference (make course): its graded run is also the reference run
        "publish_reference": sub.student in run.trusted,
        # the instructor read this student's flagged lines (autograder.tamper) and cleared them
        "review_cleared": sub.student in run.cleared,
    }
    if run.sandbox:  # autograder.sandbox.SandboxSpec limits; nbgrader_ext sets its workdir per execution
        spec["sandbox"] = {
            "workdir": str(work),
            "wall_s": cfg.notebook_timeout,
            "cpu_s": cfg.notebook_timeout,
        }
    return spec


def _unmount_under(path: Path) -> None:
    """Lazily unmount every mount at or below ``path`` (deepest first), so the folder can be removed."""
    import subprocess

    root = str(path.resolve())
    try:
        mounts = [ln.split()[1] for ln in Path("/proc/self/mounts").read_text().splitlines()]
    except OSError:
        return
    mounts = [m.encode().decode("unicode_escape") for m in mounts]  # /proc writes a space as \040
    for m in sorted((m for m in mounts if m == root or m.startswith(root + "/")), key=len, reverse=True):
        subprocess.run(["umount", "-l", m], capture_output=True)


def grade_one(run: Run, sub: Submission, client) -> Outcome:  # noqa: ANN001 - worker.WorkerClient
    """Grade one submission through ``client``'s worker; always returns an Outcome (never raises)."""
    cfg = run.cfg
    if not sub.gradable:  # nothing to run: outcome._status names it missing or refused
        return outcome_from_result(cfg, sub, "ok", "", None)
    t0 = time.monotonic()
    work = run.work / f"{sub.student}__{sub.lab}"
    if work.exists():
        _unmount_under(work)  # a worker killed hard leaves its scratch tmpfs mounted (autograder.execute)
        shutil.rmtree(work)
    (work / "evidence").mkdir(parents=True)
    shutil.copy2(run.work / "template.db", work / "gradebook.db")
    token = f"{uuid.uuid4().hex}-{sub.student}-{sub.lab}"
    spec_path = work / "spec.json"
    spec_path.write_text(json.dumps(_spec(run, sub, work, token)))
    result_path = work / "result.json"
    status, reason, leftovers = client.grade(spec_path, result_path, cfg.notebook_timeout, token)
    result = json.loads(result_path.read_text()) if result_path.exists() else None
    return outcome_from_result(
        cfg, sub, status, reason, result, leftovers=leftovers, seconds=time.monotonic() - t0
    )


def _record(run: Run, o: Outcome) -> dict:
    """Persist one finished submission: gradebook entry, CSV row, grading.json (each atomic)."""
    from autograder.manual import unchanged_answers, with_hand_points  # issue 35
    from autograder.merge import write_submission

    fb = run.cfg.nbgrader_root / "feedback" / o.student / o.lab / "grading.json"
    with run.lock:  # one writer at a time: each write replaces the whole file atomically
        if o.cells and o.status != "missing":  # nothing handed in: no gradebook submission (nbgrader's way)
            # issue 35: hand-given points survive a regrade (flagged for review only if the answer changed)
            same = unchanged_answers(run.gradebook, o)
            write_submission(run.gradebook, o.student, o.lab, o.cells, unchanged=same)
            o = with_hand_points(run.gradebook, o)
        row = outcome_row(run.cfg, o)
        write_csv([row], run.out)
        write_json(fb, {**asdict(o), "seed": run.seed, "row": row})
    return row


# ---- the run -----------------------------------------------------------------------------------------------
def _seed(out: Path, seed: int | None, force: bool, shard: tuple[int, int] | None) -> int:
    rf = run_file(out)
    recorded = json.loads(rf.read_text()).get("seed") if rf.exists() else None
    if seed is not None:
        if recorded is not None and recorded != seed and not force:
            raise ValueError(
                f"{out} was graded with --seed {recorded}, this run asks for {seed}: rows graded with two "
                f"seeds would not compare; pass --seed {recorded} to resume, or --force to regrade all"
            )
        return seed
    if recorded is not None and not force:
        return int(recorded)
    if shard is not None:
        raise ValueError(
            "--shard needs --seed: every shard of one class must draw the same hidden-test variants "
            "(e.g. SEED=$RANDOM once, then --seed $SEED on every node)"
        )
    return secrets.randbelow(2**31)


def _slot(run: Run, jobs: Queue, done: Queue, slot: int) -> None:
    from autograder.worker import READY_VAR, WorkerClient

    env = dict(os.environ)
    env[TOKEN_VAR] = f"{uuid.uuid4().hex}-worker{slot}"
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(run.cfg.root), str(Path(__file__).resolve().parents[1]), env.get("PYTHONPATH", "")])
    )
    env[READY_VAR] = str(run.work / f"worker-{slot}.ready")
    client = WorkerClient(env, run.work, run.work / f"worker-{slot}.log")
    try:
        log.debug("grading slot %d: worker started in %.1f s", slot, client.start())
        while True:
            try:
                sub = jobs.get_nowait()
            except Empty:
                return
            try:
                o = grade_one(run, sub, client)
            except Exception as exc:  # a bug in the grader itself: still one row, never a lost student
                log.exception("grading %s/%s failed", sub.student, sub.lab)
                o = Outcome(
                    sub.student, sub.lab, "error", f"grader error: {exc!r}", source_cells(run.cfg, sub.lab)
                )
            try:
                row = _record(run, o)
            except Exception:  # a full disk, a locked gradebook: say so, and keep grading the others
                log.exception("recording %s/%s failed", o.student, o.lab)
                row = None
            done.put((o, row))
    finally:
        client.close()


def _interleaved(subs: list[Submission], trusted: frozenset[str] = frozenset()) -> list[Submission]:
    """Ungradable rows first (instant), then round-robin over labs: concurrent slots start on different labs
    (each lab's first submission pays for its reference run; a ``trusted`` reference submission, which is
    that run, comes first in its lab)."""
    by_lab: dict[str, list[Submission]] = {}
    for s in sorted(subs, key=lambda s: (s.lab, s.student not in trusted, s.student)):
        if s.gradable:
            by_lab.setdefault(s.lab, []).append(s)
    order = [s for s in subs if not s.gradable]
    queues = list(by_lab.values())
    while any(queues):
        order += [q.pop(0) for q in queues if q]
    return order


def grade(
    cfg: CourseConfig,
    submissions: Path,
    *,
    labs: list[str] | None = None,
    out: Path | None = None,
    feedback: bool = True,
    progress: bool = True,
    seed: int | None = None,
    force: bool = False,
    shard: tuple[int, int] | None = None,
    unsafe_no_sandbox: bool = False,
    trusted: tuple[str, ...] = (),
    students: list[str] | None = None,
    cleared: tuple[str, ...] = (),
) -> pd.DataFrame:
    """Grade every student folder under ``submissions`` (of shard K/N); returns their rows (now or before).

    Outputs: ``out`` (default ``build/grades.csv``; with ``shard`` ``build/shards/K-of-N/grades.csv``) and its
    ``.run.json``; the gradebook beside a shard's CSV, else the course one; feedback HTML, grading.json under
    ``build/nbgrader/feedback/<student>/<lab>/``; a summary table and a score plot per lab beside the CSV.

    ``trusted``: student names whose submissions are the course's reference solutions (``make course``'s
    ``reference``): each is graded first in its lab, and its sandboxed run doubles as the lab's reference
    run (its evidence published to the cache) instead of a separate plain execution of the same code.

    Which rows are graded: ``students`` given, every row of those students (whatever their status);
    ``force``, every row; otherwise rows not in ``out`` yet, rows whose status is ``missing`` or ``error`` (a
    renamed notebook, a fixed file, a grader failure are picked up) and rows of a lab changed
    since; ``ok``, ``needs_review`` and ``timeout`` rows are kept.

    ``cleared``: students (graded now; pass them in ``students`` too) whose ``needs_review`` findings the
    instructor read and cleared: the tamper scan withholds nothing from them, its lines stay in
    ``grading.json``.
    """
    from tqdm.auto import tqdm

    from autograder.feedback import exercise_titles
    from autograder.manual import write_formgrader_config
    from autograder.merge import export_nbgrader, lab_fingerprint
    from autograder.plots import summarize
    from autograder.release import ensure_released

    subs = find_submissions(submissions, cfg.lab_ids(), labs, shard)
    if students:
        found = sorted({s.student for s in subs})
        unknown = sorted(set(students) - set(found))
        if unknown:
            where = f" in shard {shard[0]}/{shard[1]}" if shard else ""
            raise ValueError(
                f"--student {', '.join(unknown)}: no such student folder under {submissions}{where} "
                f"(found {len(found)}: {', '.join(found[:8])}{' ...' if len(found) > 8 else ''})"
            )
        subs = [s for s in subs if s.student in set(students)]
    if not subs:
        raise ValueError(f"no student folders under {submissions}; expected <student>/<lab>/<lab>.ipynb")
    tag = f"{shard[0]}-of-{shard[1]}" if shard else "all"
    out = (
        Path(out)
        if out
        else (cfg.build / "shards" / tag / "grades.csv" if shard else cfg.build / "grades.csv")
    )
    sandbox = _sandbox_ok(unsafe_no_sandbox)
    seed = _seed(out, seed, force, shard)
    graded_labs = sorted({s.lab for s in subs if s.gradable})
    for lab in graded_labs:
        ensure_released(cfg, lab)
    gradebook = out.parent / "gradebook.db" if shard else cfg.gradebook
    if shard and not gradebook.exists():
        gradebook.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(cfg.gradebook, gradebook)
    work = cfg.build / "grading" / tag
    work.mkdir(parents=True, exist_ok=True)
    shutil.copy2(cfg.gradebook, work / "template.db")  # snapshot: workers never write the course gradebook
    write_formgrader_config(cfg)  # formgrader on the course gradebook (README, hand grading)
    fps = {lab: lab_fingerprint(cfg.nbgrader_root / "source" / lab / f"{lab}.ipynb") for lab in graded_labs}
    run = Run(
        cfg,
        out,
        gradebook,
        work,
        seed,
        feedback,
        sandbox,
        trusted=frozenset(trusted),
        cleared=frozenset(cleared),
    )
    run.titles = {lab: exercise_titles(cfg, lab) for lab in cfg.lab_ids()}

    old = read_csv(out)
    rf = run_file(out)
    old_fps = json.loads(rf.read_text()).get("labs", {}) if rf.exists() else {}
    stale = {lab for lab, fp in old_fps.items() if fps.get(lab, fp) != fp}
    if stale:
        log.warning("labs %s changed since %s was graded: their rows are regraded", sorted(stale), out)
    done = (
        set()
        if force or students
        else {
            (s, lab)
            for s, lab, status in zip(old["student"], old["lab"], old["status"], strict=True)
            if lab not in stale and status not in REGRADED
        }
    )
    todo = [s for s in subs if (s.student, s.lab) not in done]
    if not (force or students):
        statuses = dict(zip(zip(old["student"], old["lab"], strict=True), old["status"], strict=True))
        retry = [s for s in todo if statuses.get((s.student, s.lab)) in REGRADED]
        if retry:
            log.info("regrading %d row(s) whose status is missing or error", len(retry))
    write_json(
        rf, {"seed": seed, "fast": cfg.fast, "labs": {**old_fps, **fps}, "shard": tag, "sandbox": sandbox}
    )
    if len(todo) < len(subs):
        log.info(
            "%d of %d submissions already in %s: skipped (--force regrades)",
            len(subs) - len(todo),
            len(subs),
            out,
        )

    jobs: Queue = Queue()
    for s in _interleaved(todo, frozenset(trusted)):
        jobs.put(s)
    finished: Queue = Queue()
    threads = [
        threading.Thread(target=_slot, args=(run, jobs, finished, i), daemon=True)
        for i in range(max(1, min(cfg.workers, len(todo))))
    ]
    for t in threads:
        t.start()
    times: list[float] = []
    bar = tqdm(total=len(todo), desc=f"autograde (seed {seed})", unit="nb", disable=not progress)
    received = 0
    while received < len(todo):
        try:
            o, _row = finished.get(timeout=1.0)
        except Empty:
            if not any(t.is_alive() for t in threads) and finished.empty():
                log.error("grading slots stopped with %d submission(s) not graded", len(todo) - received)
                break
            continue
        received += 1
        if o.status != "missing":
            times.append(o.seconds)
        mean = sum(times) / len(times) if times else 0.0
        bar.set_postfix_str(f"{o.student}/{o.lab} {o.status} {o.seconds:.0f}s; mean {mean:.0f}s/nb")
        bar.update()
    bar.close()
    for t in threads:
        t.join()
    export_nbgrader(gradebook, gradebook.parent / "grades_nbgrader.csv")
    df = read_csv(out)
    keys = {(s.student, s.lab) for s in subs}
    df = df[[(s, lab) in keys for s, lab in zip(df["student"], df["lab"], strict=True)]].reset_index(
        drop=True
    )
    # one student's regrade still summarizes the class (every row of the CSV), not that student alone
    summarize(cfg, read_csv(out) if students else df, out, progress=progress)
    return df
