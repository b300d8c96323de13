"""What to grade: every ``<student>/`` folder of a submissions directory, and a deterministic 1/N of them.

Layout expected (nbgrader's submitted layout)::

    SUBMISSIONS/<student>/<lab>/<lab>.ipynb        (homework: plus the student's homework/ package beside it)

Input mistakes are never silent: every student folder yields at least one :class:`Submission`; one that
cannot be graded carries ``problem`` (what was found and what was expected), and becomes a ``missing`` row.

Sharding (``--shard K/N``): students sorted by name, student ``i`` belongs to shard ``i % N``. Whole students,
never single labs, go to a shard, so one student's rows come from one machine; the split depends only on the
folder names, so every node of a job array computes the same partition without talking to the others.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("autograder.shard")
NO_LAB = "-"  # the lab column of a student folder that holds no recognisable lab at all


@dataclass(frozen=True)
class Submission:
    student: str
    lab: str
    notebook: Path
    problem: str = ""  # non-empty: not gradable; the reason row says what was found and what was expected

    @property
    def gradable(self) -> bool:
        return not self.problem


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` -> (K, N) with 0 <= K < N."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not m:
        raise ValueError(f"--shard expects K/N (e.g. 0/4), got {text!r}")
    k, n = int(m.group(1)), int(m.group(2))
    if n < 1 or not 0 <= k < n:
        raise ValueError(f"--shard K/N needs N >= 1 and 0 <= K < N, got K={k} N={n}")
    return k, n


def shard_students(students: list[str], shard: tuple[int, int] | None) -> list[str]:
    """The students of shard K/N: sorted names, index i kept when i % N == K (all when shard is None)."""
    names = sorted(set(students))
    if shard is None:
        return names
    k, n = shard
    return [s for i, s in enumerate(names) if i % n == k]


def _visible(p: Path) -> bool:
    return not p.name.startswith(".") and p.name not in ("__pycache__", "__MACOSX")


def _listing(d: Path, limit: int = 6) -> str:
    items = sorted(p.name + ("/" if p.is_dir() else "") for p in d.iterdir() if _visible(p))
    if not items:
        return "nothing"
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more


def _lab_problem(student: str, ldir: Path, lab: str) -> str:
    nbs = sorted(p.name for p in ldir.glob("*.ipynb") if _visible(p))
    expected = f"expected {student}/{lab}/{lab}.ipynb"
    if not nbs:
        stray = sorted(p.name for p in ldir.parent.glob(f"{lab}*.ipynb"))
        beside = f"; {', '.join(stray)} is one level up: move it into {lab}/" if stray else ""
        return f"no notebook in {student}/{lab}/ (found {_listing(ldir)}){beside}; {expected}"
    return f"found {', '.join(repr(n) for n in nbs)} in {student}/{lab}/, {expected} (rename it and regrade)"


# A problem that starts so: a notebook the grader will not read (grade_one makes it an error row, regraded on
# a rerun). Only the notebook (and a package lab's declared package files, autograder.rebuild) is ever staged,
# so nothing else in the folder is walked: a folder of 20,000 stray files is graded, not refused.
REFUSED = "refused: "


def not_plain(ldir: Path, student: str) -> str:
    """Why the lab folder or its notebook is not a plain file ('' when both are): a symlink, a hard link, a
    device, fifo or socket. Nothing else in the folder is read (autograder.rebuild stages the notebook and a
    package lab's declared files only, checking those the same way)."""
    import os
    import stat

    rel_d = ldir.relative_to(ldir.parent.parent)
    if ldir.is_symlink():
        return f"{REFUSED}{rel_d} is a symbolic link (to {os.readlink(ldir)}): submit plain files"
    nb = ldir / f"{ldir.name}.ipynb"
    try:
        st = nb.lstat()
    except FileNotFoundError:
        return ""  # a missing notebook is _lab_problem's to explain
    rel = f"{rel_d}/{nb.name}"
    if stat.S_ISLNK(st.st_mode):
        return f"{REFUSED}{rel} is a symbolic link (to {os.readlink(nb)}): submit plain files"
    if not stat.S_ISREG(st.st_mode):
        return f"{REFUSED}{rel} is not a regular file (a device, fifo or socket)"
    if st.st_nlink > 1:
        return f"{REFUSED}{rel} is a hard link ({st.st_nlink} names): submit a copy"
    return ""


def student_submissions(sdir: Path, labs: list[str], known: set[str]) -> list[Submission]:
    """The submissions of one student folder (never empty: a folder with nothing gradable gives one row)."""
    student = sdir.name
    subs: list[Submission] = []
    folders = {p.name: p for p in sdir.iterdir() if p.is_dir() and _visible(p)}
    for lab in labs:
        ldir = folders.get(lab)
        if ldir is not None:
            nb = ldir / f"{lab}.ipynb"
            problem = not_plain(ldir, student) or ("" if nb.is_file() else _lab_problem(student, ldir, lab))
            subs.append(Submission(student, lab, nb, problem))
            continue
        stray = sorted(sdir.glob(f"{lab}*.ipynb")) + sorted(sdir.glob(f"*/{lab}*.ipynb"))
        if stray:  # the notebook is there, at the wrong level or in a wrongly named folder
            found = ", ".join(str(p.relative_to(sdir.parent)) for p in stray[:3])
            subs.append(
                Submission(
                    student,
                    lab,
                    sdir / lab / f"{lab}.ipynb",
                    f"found {found}, expected {student}/{lab}/{lab}.ipynb (move it into a {lab}/ folder)",
                )
            )
    if not subs:
        unknown = sorted(set(folders) - known)
        what = f"folder(s) {unknown} are not labs of this course" if unknown else f"found {_listing(sdir)}"
        subs.append(
            Submission(
                student,
                labs[0] if len(labs) == 1 else NO_LAB,
                sdir,
                f"no lab submission in {student}/: {what}; expected {student}/<lab>/<lab>.ipynb "
                f"for a lab in {labs}",
            )
        )
    return subs


def find_submissions(
    root: Path, known_labs: list[str], labs: list[str] | None = None, shard: tuple[int, int] | None = None
) -> list[Submission]:
    """Every student folder under ``root`` (of shard K/N): its submissions of ``labs`` (default: all known).

    Raises ValueError when ``root`` is missing or a requested lab is not a lab of the course.
    """
    root = Path(root)
    if not root.is_dir():
        raise ValueError(
            f"submissions directory {root} does not exist; expected {root}/<student>/<lab>/<lab>.ipynb"
        )
    known = set(known_labs)
    wanted = list(labs) if labs else sorted(known)
    bad = [lab for lab in wanted if lab not in known]
    if bad:
        raise ValueError(f"--lab {bad} is not a lab of this course; labs: {sorted(known)}")
    students = {p.name: p for p in root.iterdir() if p.is_dir() and _visible(p)}
    loose = sorted(p.name for p in root.iterdir() if p.is_file() and _visible(p))
    if loose:
        log.warning(
            "%d file(s) directly in %s are not in a student folder and are not graded: %s",
            len(loose),
            root,
            loose[:5],
        )
    out: list[Submission] = []
    for name in shard_students(list(students), shard):
        out += student_submissions(students[name], wanted, known)
    return out
