"""python -m autograder: release the labs, autograde a class (sharded on a cluster if you like), merge shards.

commands:
  release   solutions/<lab>/<lab>.py -> labs/<lab>/ (the student release; make release)
  grade     autograde SUBMISSIONS/<student>/<lab>/<lab>.ipynb -> build/grades.csv, feedback, gradebook
  merge     combine the CSVs and gradebooks of `grade --shard K/N` runs into the course's
  course    make course: release, sample class through nbgrader, every mutant at exercise level
  mutants   every known-wrong answer loses exactly its exercise (exercise level, fast mode)
  manual    hand grading: a CSV of the written answers to grade (--template), then its points -> gradebook
  export    final grades (auto + hand-given) -> build/grades.csv, feedback regenerated with the final score
  student-repo  write the student distribution (labs, homework skeleton, course_dist, make lab; no answers)

examples:
  python -m autograder release --lab lab02
  python -m autograder grade ~/collected --workers 4                  # resumes; --force regrades
  python -m autograder grade ~/collected --shard 0/8 --seed 1234      # on node 0 of 8 (see autograder/slurm/)
  python -m autograder merge build/shards/*-of-8
  python -m autograder manual --template build/manual.csv && python -m autograder manual build/manual.csv
  python -m autograder export
  python -m autograder student-repo ../course-student                 # then git init/add/commit/push there
  python -m autograder grade --help                                    # each command explains its outputs
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from autograder.config import CourseConfig

RAW = argparse.RawDescriptionHelpFormatter

GRADE_HELP = """Autograde every student folder of SUBMISSIONS (nbgrader's submitted layout):

  SUBMISSIONS/<student>/<lab>/<lab>.ipynb       homework: plus the student's homework/ package beside it

Each submission runs in its own sandboxed kernel (bubblewrap; --unsafe-no-sandbox to go without) inside one
of --workers long-lived grading workers; hidden-test variants are drawn from --seed (drawn once per class and
recorded). Every student folder gets a row: a misplaced notebook (alice/lab02.ipynb,
carol/lab02/lab02 (1).ipynb) gets status 'missing' and a reason naming what was found and what was expected.

outputs (written as each submission finishes, atomically; a killed run loses only what was in flight):
  build/grades.csv                  student, lab, score, max_score, <points per exercise>, needs_manual,
                                    status, reason (one short reason per failing exercise), seconds
  build/grades.run.json             seed, mode and the fingerprint of every lab graded (for resuming, merge)
  build/grades.summary.md           per lab: mean, median, a histogram per exercise; scores_<lab>.png
  build/nbgrader/gradebook.db       the gradebook (formgrader, nbgrader export); grades_nbgrader.csv beside it
  build/nbgrader/feedback/<student>/<lab>/<lab>.html   feedback; grading.json beside it: every message in full
  with --shard K/N: build/shards/K-of-N/{grades.csv,grades.run.json,gradebook.db}; then run `merge`.

examples:
  python -m autograder grade ~/collected                       # every lab, 2 workers, fast mode
  python -m autograder grade ~/collected --lab lab02 --workers 8 --seed 7
  python -m autograder grade ~/collected                       # again: grades missing/error rows, keeps ok
  python -m autograder grade ~/collected --student alice       # regrade one student (repeatable)
  python -m autograder grade ~/collected --force               # regrade rows already in the CSV
  python -m autograder grade ~/collected --shard 3/8 --seed 7  # node 3 of 8 (autograder/slurm/)
"""

MERGE_HELP = """Combine the outputs of `grade --shard K/N` runs (each a folder with grades.csv,
grades.run.json and gradebook.db) into one CSV and the course gradebook. Idempotent: merging again changes
nothing. Refuses shards graded with different seeds, modes or versions of a lab (fingerprints in
grades.run.json), and gradebooks whose assignment cells differ from the course gradebook's.

outputs: --out (default build/grades.csv) and its .run.json, --gradebook (default build/nbgrader/gradebook.db)
and grades_nbgrader.csv beside it.

example:
  python -m autograder merge build/shards/*-of-8
"""

MANUAL_HELP = """Hand grading of the written answers through a CSV (nbgrader's formgrader writes the same
gradebook fields: see the README). Columns: student, lab, grade_id, points, comment (others are ignored).

  --template OUT.csv   one row per written answer still to grade, with the student's answer text and
                       the cell's max_points; fill in points (and comment) in a spreadsheet (--all: graded
                       ones too, with their current points)
  IMPORT.csv           writes each row's points (and non-empty comment) into the gradebook; rows without
                       points are skipped. The whole file is refused, nothing written, if any row names an
                       unknown student, lab or grade_id, an auto-graded cell, a row whose grades.csv status
                       is not ok, or points that are not a number in [0, the cell's maximum]; the message
                       names each bad line. Auto scores and other cells are never touched.

outputs: build/nbgrader/gradebook.db (manual_score, manual_comment, needs_manual_grade of the named cells);
the template CSV; build/nbgrader/nbgrader_config.py (formgrader's configuration). Then run `export`.

examples:
  python -m autograder manual --template build/manual.csv      # grade in a spreadsheet, then:
  python -m autograder manual build/manual.csv
  python -m autograder export
"""

EXPORT_HELP = """Final grades: every 'ok' row of the CSV is recomputed from the course gradebook (auto
points + hand-given points; needs_manual = points of written answers still ungraded) and each of those
students' feedback is regenerated with the final score (the hand-grader's comments included). Rows of other
statuses are kept as they are. Run it after hand grading (CSV or formgrader); running it again changes
nothing.

outputs: build/grades.csv (score, exercise columns, needs_manual), build/grades.summary.md and
scores_<lab>.png, build/nbgrader/feedback/<student>/<lab>/<lab>.html, build/nbgrader/grades_nbgrader.csv.

example:
  python -m autograder export
"""

COURSE_HELP = """The main job (make course): release every lab, grade a sample class through real nbgrader
(per lab: the reference must earn every auto point, the untouched release none; on one lab drawn by the
seed a sampled mutant must lose exactly its exercise), check every mutant at the exercise level, and print a
table per lab.

outputs: build/grades.csv (+ .summary.md, scores_<lab>.png), build/grades_checked.csv (a 'check' column per
sample), build/scores.png, feedback under build/nbgrader/feedback/, build/reference/<lab>/ with
--execute-references. Exit status 1 if any expectation fails.

examples:
  python -m autograder course                     # every lab (make course)
  python -m autograder course --lab lab02         # one lab while writing it
"""


STUDENT_REPO_HELP = """Write the student distribution into DIR: the repository students clone (publish it
as its own git repository; never give students the course repository, which holds the answers).

DIR gets labs/ (the release; labs/homework/homework/ is the homework skeleton), course_dist/, the pinned
requirements.txt, constraints.txt and environment.yml, and the student's README.md, Makefile (make lab) and
.gitignore. No solutions/, no autograder/ (judges, mutants, rubrics), no solution or hidden-test line. It
refuses a missing release (run make release) or a stale homework skeleton, and a non-empty DIR unless --force
(which replaces everything in DIR but .git/).

publish:
  python -m autograder student-repo ../course-student
  cd ../course-student && git init -b main && git add -A && git commit -m "course release"
  git remote add origin <students' repository URL> && git push -u origin main
update (later releases): python -m autograder student-repo ../course-student --force, then commit and push.
"""


def _positive(kind: type):
    def parse(text: str):
        try:
            v = kind(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"expected a positive {kind.__name__}, got {text!r}") from exc
        if v <= 0:
            raise argparse.ArgumentTypeError(f"expected a positive {kind.__name__}, got {text!r}")
        return v

    return parse


def _shard(text: str) -> tuple[int, int]:
    from autograder.shard import parse_shard

    try:
        return parse_shard(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m autograder", description=__doc__, formatter_class=RAW)
    p.add_argument("--root", type=Path, default=None, help="course repository root (default: this checkout)")
    p.add_argument("-v", "--verbose", action="store_true")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    r = sub.add_parser(
        "release",
        help="regenerate labs/ from solutions/",
        formatter_class=RAW,
        description="solutions/<lab>/<lab>.py -> build/nbgrader/source -> nbgrader generate_assignment -> "
        "labs/<lab>/ (deterministic).\n\nexample:\n  python -m autograder release --lab lab02",
    )
    r.add_argument("--lab", action="append", help="only this lab (repeatable)")

    g = sub.add_parser("grade", help="autograde a class", description=GRADE_HELP, formatter_class=RAW)
    g.add_argument("submissions", type=Path, help="folder of <student>/<lab>/<lab>.ipynb")
    g.add_argument("--lab", action="append", help="only this lab (repeatable)")
    g.add_argument("--workers", type=_positive(int), default=2, help="submissions in parallel (default 2)")
    g.add_argument(
        "--timeout", type=_positive(float), default=None, help="cap per submission, s (default 900)"
    )
    g.add_argument(
        "--cell-timeout", type=_positive(float), default=None, help="per-cell limit, s (default 240)"
    )
    g.add_argument("--out", type=Path, default=None, help="CSV (default build/grades.csv)")
    g.add_argument("--full", action="store_true", help="grade in full mode (COURSE_FAST=0); default is fast")
    g.add_argument("--no-feedback", action="store_true", help="skip the per-student feedback HTML")
    g.add_argument("--seed", type=int, default=None, help="hidden-test variants (default: drawn, recorded)")
    g.add_argument("--force", action="store_true", help="regrade rows already in the CSV")
    g.add_argument(
        "--student",
        action="append",
        metavar="NAME",
        help="regrade only this student's rows, whatever their status (repeatable)",
    )
    g.add_argument(
        "--clear-review",
        action="append",
        metavar="NAME",
        default=[],
        help="a needs_review row: you read its flagged lines (grading.json, messages.review): innocent; "
        "regrades NAME with nothing withheld, the lines kept in its notes (repeatable)",
    )
    g.add_argument(
        "--shard", type=_shard, default=None, metavar="K/N", help="grade students i with i%%N == K"
    )
    g.add_argument("--unsafe-no-sandbox", action="store_true", help="run kernels unconfined (trusted input)")

    m = sub.add_parser("merge", help="combine shard outputs", description=MERGE_HELP, formatter_class=RAW)
    m.add_argument("shards", nargs="+", type=Path, help="folders written by grade --shard K/N")
    m.add_argument("--out", type=Path, default=None, help="CSV (default build/grades.csv)")
    m.add_argument("--gradebook", type=Path, default=None, help="default build/nbgrader/gradebook.db")

    ma = sub.add_parser(
        "manual", help="hand grading through a CSV", description=MANUAL_HELP, formatter_class=RAW
    )
    ma.add_argument(
        "csv", type=Path, nargs="?", help="CSV to import (student, lab, grade_id, points, comment)"
    )
    ma.add_argument("--template", type=Path, metavar="OUT", help="write the CSV of written answers to grade")
    ma.add_argument("--all", action="store_true", help="with --template: graded answers too")

    e = sub.add_parser(
        "export", help="final grades and feedback", description=EXPORT_HELP, formatter_class=RAW
    )
    e.add_argument("--out", type=Path, default=None, help="CSV (default build/grades.csv)")
    e.add_argument("--no-feedback", action="store_true", help="skip regenerating the feedback HTML")

    c = sub.add_parser("course", help="make course", description=COURSE_HELP, formatter_class=RAW)
    c.add_argument("--lab", action="append", help="only this lab (repeatable)")
    c.add_argument("--workers", type=_positive(int), default=2)
    c.add_argument("--execute-references", action="store_true", help="also run each reference in full mode")
    c.add_argument("--unsafe-no-sandbox", action="store_true", help="run kernels unconfined")
    c.add_argument(
        "--seed", type=int, default=None, help="grading seed (default: a fresh one, logged; reproduces a run)"
    )

    mu = sub.add_parser(
        "mutants",
        help="exercise-level mutant check",
        formatter_class=RAW,
        description="Swap each known-wrong answer (autograder/mutants/<lab>/) into the reference, run it in "
        "fast mode, and check it loses exactly its own exercise.\n\n"
        "example:\n  python -m autograder mutants --lab lab02",
    )
    mu.add_argument("--lab", action="append", help="only this lab (repeatable)")
    mu.add_argument(
        "--next-hidden",
        action="store_true",
        help="past its own exercise, run each mutant through the next exercise's hidden parts too (default: "
        "their visible parts; lab03's walk then costs a fifth more CPU)",
    )

    sr = sub.add_parser(
        "student-repo",
        help="write the student distribution",
        description=STUDENT_REPO_HELP,
        formatter_class=RAW,
    )
    sr.add_argument("dir", type=Path, metavar="DIR", help="where to write it (outside the course repository)")
    sr.add_argument("--force", action="store_true", help="replace DIR's contents (its .git/ is kept)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
        datefmt="%H:%M:%S",
    )
    logging.getLogger("traitlets").setLevel(logging.WARNING)
    cfg = CourseConfig(root=args.root) if args.root else CourseConfig()
    if args.cmd == "release":
        from autograder.release import release

        labs = release(cfg, args.lab)
        logging.getLogger("autograder").info("released %s into %s", ", ".join(labs) or "nothing", cfg.labs)
        return 0
    if args.cmd == "grade":
        import pandas as pd

        from autograder.grade import grade

        changes: dict = {"workers": args.workers, "fast": not args.full}
        if args.cell_timeout:
            changes["cell_timeout"] = args.cell_timeout
        if args.timeout:
            changes["notebook_timeout"] = args.timeout
        try:  # issue 35: bad instructor input (a folder, --lab, --student, --seed, no sandbox) -> one line
            df = grade(
                cfg.with_(**changes),
                args.submissions,
                labs=args.lab,
                out=args.out,
                feedback=not args.no_feedback,
                seed=args.seed,
                force=args.force,
                shard=args.shard,
                unsafe_no_sandbox=args.unsafe_no_sandbox,
                students=sorted(set(args.student or []) | set(args.clear_review)) or None,
                cleared=tuple(args.clear_review),
            )
        except (ValueError, RuntimeError) as exc:
            sys.stderr.write(f"grade: {exc}\n")
            return 2
        with pd.option_context("display.max_columns", 50, "display.width", 160, "display.max_colwidth", 60):
            sys.stdout.write(df.to_string(index=False) + "\n")
        return 0
    if args.cmd == "merge":
        from autograder.manual import final_rows
        from autograder.merge import merge_shards

        try:  # issue 35: a folder that is not a shard, shards that do not belong together -> one line
            df = merge_shards(
                args.shards, args.out or cfg.build / "grades.csv", args.gradebook or cfg.gradebook,
                finalize=lambda rows, gb: final_rows(cfg, rows, gb),
            )
        except ValueError as exc:
            sys.stderr.write(f"merge: {exc}\n")
            return 2
        sys.stdout.write(f"merged {len(args.shards)} shard(s): {len(df)} rows\n")
        return 0
    if args.cmd == "manual":
        from autograder.manual import import_manual, write_template

        if (args.csv is None) == (args.template is None):
            sys.stderr.write("manual: give either IMPORT.csv or --template OUT.csv (see --help)\n")
            return 2
        try:
            if args.template is not None:
                n = write_template(cfg, args.template, every=args.all)
                sys.stdout.write(f"{args.template}: {n} written answer(s) to grade\n")
            else:
                grades = import_manual(cfg, args.csv)
                sys.stdout.write(
                    f"{len(grades)} hand-given score(s) written; run `export` for final grades\n"
                )
        except ValueError as exc:
            sys.stderr.write(f"{exc}\n")
            return 1
        return 0
    if args.cmd == "export":
        from autograder.manual import export

        try:
            df = export(cfg, out=args.out, feedback=not args.no_feedback)
        except ValueError as exc:
            sys.stderr.write(f"{exc}\n")
            return 1
        sys.stdout.write(f"{len(df)} rows in {args.out or cfg.build / 'grades.csv'}\n")
        return 0
    if args.cmd in ("course", "mutants"):
        from autograder.mutants import checked_problems

        # a stale or malformed mutant stops the run before anything is graded, naming every such file
        broken = checked_problems(cfg, args.lab or cfg.lab_ids())
        if broken:
            sys.stderr.write(f"{args.cmd}: fix or delete these files first:\n  " + "\n  ".join(broken) + "\n")
            return 2
    if args.cmd == "course":
        from autograder.course import course

        return course(
            cfg.with_(workers=args.workers),
            args.lab,
            execute_references=args.execute_references,
            unsafe_no_sandbox=args.unsafe_no_sandbox,
            seed=args.seed,
        )
    if args.cmd == "mutants":
        from autograder.mutant_check import check_all

        return check_all(cfg, args.lab, next_hidden=args.next_hidden)
    if args.cmd == "student-repo":
        from autograder.student_repo import build_student_repo, publish_commands

        try:
            files = build_student_repo(cfg, args.dir, force=args.force)
        except ValueError as exc:
            sys.stderr.write(f"student-repo: {exc}\n")
            return 2
        sys.stdout.write(
            f"wrote the student distribution to {args.dir.resolve()} ({len(files)} files); publish it:\n"
            + publish_commands(args.dir)  # issue 35: commands that work as printed
        )
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
