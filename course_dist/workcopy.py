"""A student's own working copy of the labs: ``work/<lab>/``, made once, never overwritten by a course update.

``labs/`` is generated and tracked by git, so a student who edits it there gets a merge conflict at the next
``git pull``. ``make lab`` instead works in ``work/`` (ignored by git)::

    python -m course_dist.workcopy            # copy every released lab not yet in work/; report updates
    python -m course_dist.workcopy --lab lab02

A lab already in ``work/`` is never touched. When the release changed since it was copied, the new release is
put beside it as ``<lab>.updated.ipynb`` (the student's notebook stays as it is) and the command says so.
``work/<lab>/`` is also exactly what a student hands in (see the README, "Submitting").
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STAMP = ".release-sha256"  # digest of the release a working copy was made from


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def copy_lab(lab_dir: Path, work: Path, skeleton: Path | None = None) -> str:
    """Make or refresh-check ``work/<lab>/`` from ``lab_dir``; returns a one-line report."""
    lab = lab_dir.name
    notebook = lab_dir / f"{lab}.ipynb"
    if not notebook.is_file():
        raise ValueError(f"{lab_dir} has no {notebook.name}: run `make release` first")
    dest = work / lab
    new = _digest(notebook)
    if not dest.exists():
        shutil.copytree(lab_dir, dest, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
        if skeleton is not None and skeleton.is_dir():  # the homework package the notebook drives
            shutil.copytree(skeleton, dest / skeleton.name, ignore=shutil.ignore_patterns("__pycache__"))
        (dest / STAMP).write_text(new + "\n")
        return f"{lab}: new working copy in {dest}"
    stamp = dest / STAMP
    old = stamp.read_text().strip() if stamp.exists() else ""
    if old == new:
        return f"{lab}: {dest} is up to date (your work is untouched)"
    shutil.copy2(notebook, dest / f"{lab}.updated.ipynb")
    stamp.write_text(new + "\n")
    return (
        f"{lab}: the course updated this lab; your notebook is untouched and the new release is "
        f"{dest / (lab + '.updated.ipynb')} (copy over what you need)"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m course_dist.workcopy",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--labs", type=Path, default=REPO / "labs", help="the release (default: labs/)")
    p.add_argument("--work", type=Path, default=REPO / "work", help="working copies (default: work/)")
    p.add_argument("--lab", action="append", help="only this lab (repeatable)")
    ns = p.parse_args(argv)
    if not ns.labs.is_dir():
        p.error(f"no release at {ns.labs}: run `make release`")
    ns.work.mkdir(parents=True, exist_ok=True)
    labs = sorted(d for d in ns.labs.iterdir() if d.is_dir() and (not ns.lab or d.name in ns.lab))
    if ns.lab and len(labs) != len(ns.lab):
        p.error(
            f"unknown lab(s) {sorted(set(ns.lab) - {d.name for d in labs})}; released: "
            f"{sorted(d.name for d in ns.labs.iterdir() if d.is_dir())}"
        )
    for d in labs:
        skeleton = REPO / "homework" if d.name == "homework" else None
        sys.stdout.write(copy_lab(d, ns.work, skeleton) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
