"""What is graded of a submission: the student's answer cells in the released notebook, nothing else.

A notebook is code the student controls from top to bottom: a cell after the tests can rewrite their evidence,
a cell anywhere can patch the helpers the tests measure with, and a test cell's nbgrader metadata can be
edited. So the grader never runs the notebook as handed in. It takes the *released* notebook (every set-up,
test and measurement cell as the course wrote it; nbgrader then restores the hidden tests into it) and puts
the student's answer cells into it, matched by grade id::

    nb, notes = rebuild(student_nb, release_nb)      # raises Unusable with the reason

Everything else the student wrote - extra cells, edits to locked cells, edited metadata - is not run; the
feedback says how many such cells were left out. An answer cell is found by its grade id, or, when its
metadata was edited away, by its position if the notebook still has the release's shape; one that cannot be
found is graded as the unanswered stub. Two answer cells with one grade id are ambiguous: refused.
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import nbformat

from autograder.source import grade_id, nbgrader_meta

NOTE_MARK = "course-grader-note"  # metadata key of the note cell the rebuild adds


class Unusable(ValueError):
    """The submission cannot be graded; the message says why and what to do."""


def _is_answer(cell: nbformat.NotebookNode) -> bool:
    return bool(nbgrader_meta(cell).get("solution"))


def read_submission(path: object) -> nbformat.NotebookNode:
    """The student's notebook, or Unusable naming what is wrong with the file."""
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as exc:  # JSON errors, a binary file, a notebook of another format
        raise Unusable(f"not a readable notebook ({type(exc).__name__}: {str(exc)[:160]})") from None
    if not isinstance(nb.get("cells"), list):
        raise Unusable("not a notebook: it has no list of cells")
    return nb


def rebuild(
    student: nbformat.NotebookNode, release: nbformat.NotebookNode
) -> tuple[nbformat.NotebookNode, list[str]]:
    """(the notebook to grade, notes for the feedback): ``release`` with ``student``'s answer cells."""
    by_id: dict[str, list[nbformat.NotebookNode]] = {}
    for cell in student.cells:
        if _is_answer(cell) and grade_id(cell):
            by_id.setdefault(grade_id(cell), []).append(cell)
    dup = sorted(g for g, cells in by_id.items() if len(cells) > 1)
    if dup:
        raise Unusable(
            f"answer cell(s) {dup} appear more than once (a copied cell?): keep one of each and resubmit"
        )
    known = {grade_id(c) for c in release.cells if grade_id(c)}
    same_shape = len(student.cells) == len(release.cells)
    out = copy.deepcopy(release)
    notes: list[str] = []
    used: set[int] = set()
    for i, cell in enumerate(out.cells):
        if not _is_answer(cell):
            continue
        gid = grade_id(cell)
        mine = by_id.get(gid, [None])[0]
        if mine is None and same_shape:
            # metadata edited away (or renamed): the cell at the release's position, if it is no other cell
            cand = student.cells[i]
            if cand.cell_type == cell.cell_type and grade_id(cand) not in known:
                mine = cand
                notes.append(
                    f"answer cell {gid} was found by its position (its nbgrader metadata was edited)"
                )
        if mine is None:
            notes.append(f"answer cell {gid} was not found in the submission: graded as unanswered")
            continue
        if mine.cell_type != cell.cell_type:
            notes.append(
                f"answer cell {gid} is a {mine.cell_type} cell, expected {cell.cell_type}: unanswered"
            )
            continue
        used.add(id(mine))
        cell.source = mine.source
    left_out = sum(1 for c in student.cells if id(c) not in used and _differs(c, release))
    if left_out:
        notes.append(
            f"{left_out} cell(s) outside the answer cells (added, or locked cells edited) were not run: "
            "only answer cells are graded"
        )
    if notes:
        text = "**Grader's note.** " + " ".join(f"{n[0].upper()}{n[1:]}." for n in notes)
        note = nbformat.v4.new_markdown_cell(text, metadata={NOTE_MARK: True})
        note["id"] = "grader-note"  # fixed: the same submission rebuilds to the same notebook
        out.cells.insert(0, note)
    return out, notes


def _differs(cell: nbformat.NotebookNode, release: nbformat.NotebookNode) -> bool:
    """True for a student cell that is not an unchanged copy of some non-answer release cell (an added cell,
    an edited locked one): those are what the rebuild leaves out, and the note counts them."""
    if _is_answer(cell) and grade_id(cell) in {grade_id(c) for c in release.cells if _is_answer(c)}:
        return False
    src = cell.source if isinstance(cell.source, str) else "".join(cell.source)
    return not any(
        c.source == src and c.cell_type == cell.cell_type for c in release.cells if not _is_answer(c)
    )


STAGE_VAR = "COURSE_STAGE_MB"  # the bytes a submission may stage (apparent sizes), in MiB; default 64


def stage_limit() -> int:
    import os

    raw = os.environ.get(STAGE_VAR, "")
    try:
        return (int(raw) if raw else 64) << 20
    except ValueError as exc:
        raise ValueError(f"{STAGE_VAR}={raw!r} is not an integer number of MiB") from exc


def declared_files(cfg: object, lab: str) -> list[str]:
    """The files a submission of ``lab`` hands in besides its notebook: for a package lab (the rubric's
    ``submit_as``), the ``.py`` files of the package the student distribution ships (``homework/*.py``)."""
    from autograder.rubrics import load_rubric

    rp = Path(cfg.rubric) / f"{lab}.yaml"
    out: list[str] = []
    for folder in load_rubric(rp).submit_as.values() if rp.exists() else ():
        skeleton = Path(cfg.root) / folder
        out += [f"{folder}/{p.name}" for p in sorted(skeleton.glob("*.py"))]
    return out


def _plain(path: Path, rel: str) -> int:
    """The apparent size of a plain file (a sparse file counts in full); Unusable for a link or a special
    file: it would bring in whatever it points at."""
    import stat

    st = path.lstat()
    if stat.S_ISLNK(st.st_mode):
        raise Unusable(f"{rel} is a symbolic link: submit plain files")
    if not stat.S_ISREG(st.st_mode):
        raise Unusable(f"{rel} is not a regular file (a device, fifo or socket)")
    if st.st_nlink > 1:
        raise Unusable(f"{rel} is a hard link ({st.st_nlink} names): submit a copy")
    return st.st_size


def _others(src: Path, staged: set[str], limit: int = 100_000) -> int:
    """How many other entries the folder holds (not staged, counted for the note; stops at ``limit``)."""
    import os

    count, todo = 0, [src]
    while todo and count < limit:
        d = todo.pop()
        try:
            with os.scandir(d) as it:
                for e in it:
                    rel = Path(e.path).relative_to(src).as_posix()
                    if e.name in (".ipynb_checkpoints", "__pycache__"):
                        continue
                    if e.is_dir(follow_symlinks=False):
                        todo.append(Path(e.path))
                    elif rel not in staged:
                        count += 1
        except OSError:
            continue
    return count


def stage_submission(cfg: object, lab: str, src: Path, dst: Path) -> tuple[list[str], dict[str, str], list]:
    """Stage what is graded of the student's lab folder ``src`` into ``dst``: the notebook, rebuilt, and a
    package lab's declared files (:func:`declared_files`). Nothing else is copied - a ``course_dist/`` folder
    or a sidecar module beside the notebook could otherwise be imported by the kernel - and the feedback says
    how many files were left out. The staged files are plain files whose apparent sizes (a sparse file counts
    in full) add up to at most :func:`stage_limit` bytes.

    Returns (notes for the feedback, {test grade_id: why its points are withheld}, tamper findings); raises
    :class:`Unusable` when the notebook cannot be graded."""
    from autograder.tamper import withheld_points

    limit = stage_limit()
    nb_rel = f"{lab}.ipynb"
    wanted = [nb_rel, *(f for f in declared_files(cfg, lab) if (src / f).exists() or (src / f).is_symlink())]
    sizes = {rel: _plain(src / rel, rel) for rel in wanted}
    total = sum(sizes.values())
    if total > limit:
        big = max(sizes, key=sizes.get)
        raise Unusable(
            f"the graded files add up to {total / 2**20:.1f} MiB, over the {limit >> 20} MiB limit "
            f"({big}: {sizes[big] / 2**20:.1f} MiB); clear the notebook's outputs (Edit > Clear Outputs of "
            f"All Cells) and resubmit"
        )
    if dst.exists():
        shutil.rmtree(dst)
    dst.mkdir(parents=True)
    for rel in wanted[1:]:
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src / rel, dst / rel)
    release = nbformat.read(Path(cfg.nbgrader_root) / "release" / lab / f"{lab}.ipynb", as_version=4)
    nb, notes = rebuild(read_submission(src / nb_rel), release)
    others = _others(src, set(wanted))
    if others:
        only = " and ".join([nb_rel, *sorted({w.split("/")[0] + "/*.py" for w in wanted[1:]})])
        notes.append(f"{others} other file(s) in the folder were not staged: only {only} are graded")
    withheld, findings = withheld_points(cfg, lab, nb)
    nbformat.write(nb, dst / nb_rel)
    return notes, withheld, findings
