"""``python -m autograder <command>``; see the package docstring."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from autograder.config import CourseConfig


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


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m autograder", description=__doc__)
    p.add_argument("--root", type=Path, default=None, help="course repository root (default: this checkout)")
    p.add_argument("-v", "--verbose", action="store_true")
    sub = p.add_subparsers(dest="cmd", required=True)

    r = sub.add_parser("release", help="regenerate labs/ from solutions/ (nbgrader generate_assignment)")
    r.add_argument("--lab", action="append", help="only this lab (repeatable)")

    g = sub.add_parser(
        "grade", help="autograde <dir>/<student>/<lab>/<lab>.ipynb, one process per submission"
    )
    g.add_argument("submissions", type=Path)
    g.add_argument("--lab", action="append", help="only this lab (repeatable)")
    g.add_argument(
        "--workers", type=_positive(int), default=2, help="submissions graded in parallel (default 2)"
    )
    g.add_argument(
        "--timeout",
        type=_positive(float),
        default=None,
        help="wall-clock cap per submission in seconds; kills its whole process tree (default 900)",
    )
    g.add_argument("--cell-timeout", type=_positive(float), default=None, help="per-cell limit (default 240)")
    g.add_argument("--out", type=Path, default=None, help="CSV to merge rows into (default build/grades.csv)")
    g.add_argument("--full", action="store_true", help="grade in full mode (COURSE_FAST=0); default is fast")
    g.add_argument("--no-feedback", action="store_true", help="skip the per-student feedback HTML")

    c = sub.add_parser(
        "course", help="make course: release, execute references, grade the sample submissions"
    )
    c.add_argument("--lab", action="append", help="only this lab (repeatable)")
    c.add_argument("--workers", type=_positive(int), default=2)

    m = sub.add_parser("mutants", help="exercise-level mutant check (nbclient, fast mode)")
    m.add_argument("--lab", action="append", help="only this lab (repeatable)")
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
        from autograder.grade import grade

        changes: dict = {"workers": args.workers, "fast": not args.full}
        if args.cell_timeout:
            changes["cell_timeout"] = args.cell_timeout
        if args.timeout:
            changes["notebook_timeout"] = args.timeout
        cfg = cfg.with_(**changes)
        df = grade(cfg, args.submissions, labs=args.lab, out=args.out, feedback=not args.no_feedback)
        import pandas as pd

        with pd.option_context("display.max_columns", 50, "display.width", 160, "display.max_colwidth", 60):
            sys.stdout.write(df.to_string(index=False) + "\n")
        return 0
    if args.cmd == "course":
        from autograder.course import course

        return course(cfg.with_(workers=args.workers), args.lab)
    if args.cmd == "mutants":
        from autograder.mutant_check import check_all

        return check_all(cfg, args.lab)
    return 2


if __name__ == "__main__":
    sys.exit(main())
