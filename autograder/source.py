"""Reading a lab's hand-edited source and finding what must never reach students.

A lab is ``solutions/<lab>/<lab>.py`` in jupytext *percent* format; each cell header carries the nbgrader
metadata (``# %% nbgrader={...}``), so the source diffs as code and ruff lints it. This module turns it into a
notebook, and extracts the solution regions and hidden-test regions line by line (the leak and hint checks
compare against them).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import nbformat

BEGIN_SOLUTION, END_SOLUTION = "BEGIN SOLUTION", "END SOLUTION"
BEGIN_HIDDEN, END_HIDDEN = "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"
# Lines shorter than this (after stripping indentation and comments) are "trivial": `return x`, `else:`, `)`.
# They occur everywhere and would make the leak check flag prose or stubs.
MIN_LINE_CHARS = 16
_ID_OK = re.compile(r"[^A-Za-z0-9_-]")


def is_notebook_source(path: Path) -> bool:
    """True if ``path`` is a jupytext percent notebook (has at least one ``# %%`` cell marker)."""
    if not path.is_file():
        return False
    with open(path, encoding="utf-8") as fh:
        return any(line.startswith("# %%") for line in fh)


def read_source(path: Path) -> nbformat.NotebookNode:
    """Read a percent-format source into an nbformat v4 notebook with stable cell ids and no jupytext
    metadata.

    Cell id = the nbgrader ``grade_id`` where there is one, else ``cell-<index>``: re-running the release on
    an unchanged source gives byte-identical notebooks.
    """
    import jupytext

    nb = jupytext.read(path, fmt="py:percent")
    nb.metadata.pop("jupytext", None)
    nb.metadata["kernelspec"] = {
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
        "name": "python3",
    }
    nb.metadata["language_info"] = {"name": "python"}
    nb.nbformat, nb.nbformat_minor = 4, 5
    seen: set[str] = set()
    for i, cell in enumerate(nb.cells):
        gid = grade_id(cell)
        cid = _ID_OK.sub("-", gid)[:64] if gid else f"cell-{i:03d}"
        if cid in seen:  # a duplicated grade_id is reported by nbgrader; keep ids unique meanwhile
            cid = f"cell-{i:03d}"
        seen.add(cid)
        cell["id"] = cid
        # keep only nbgrader's metadata (jupytext adds layout keys such as lines_to_next_cell)
        cell.metadata = {k: v for k, v in cell.metadata.items() if k == "nbgrader"}
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return nb


def nbgrader_meta(cell: dict) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def grade_id(cell: dict) -> str | None:
    return nbgrader_meta(cell).get("grade_id")


def graded_cells(nb: nbformat.NotebookNode) -> dict[str, dict]:
    """grade_id -> {points, kind, cell_type} for every cell with ``grade: true``.

    kind is ``manual`` for a graded answer cell (``solution: true``, a written answer) and ``auto`` for a
    test cell.
    """
    out: dict[str, dict] = {}
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        if meta.get("grade"):
            out[meta["grade_id"]] = {
                "points": float(meta.get("points", 0)),
                "kind": "manual" if meta.get("solution") else "auto",
                "cell_type": cell.cell_type,
            }
    return out


def solution_cells(nb: nbformat.NotebookNode) -> dict[str, dict]:
    """grade_id -> cell for every answer cell (``solution: true``), graded or not."""
    return {nbgrader_meta(c)["grade_id"]: c for c in nb.cells if nbgrader_meta(c).get("solution")}


def _regions(source: str, begin: str, end: str) -> list[list[str]]:
    regions, current = [], None
    for line in source.splitlines():
        if begin in line:
            current = []
        elif end in line and current is not None:
            regions.append(current)
            current = None
        elif current is not None:
            current.append(line)
    return regions


def normalize_line(line: str, cell_type: str = "code") -> str:
    """Whitespace-collapsed line without a trailing comment (code) or leading markdown quote marks."""
    s = line.strip()
    if cell_type == "code":
        s = "" if s.startswith("#") else s.split("  #", 1)[0]
    return " ".join(s.split())


def nontrivial(lines: Iterable[str], cell_type: str = "code") -> set[str]:
    out = set()
    for line in lines:
        s = normalize_line(line, cell_type)
        if len(s) >= MIN_LINE_CHARS:
            out.add(s)
    return out


def solution_lines(nb: nbformat.NotebookNode) -> set[str]:
    """Non-trivial lines inside ``BEGIN SOLUTION`` regions (code and written answers)."""
    out: set[str] = set()
    for cell in nb.cells:
        for region in _regions(cell.source, BEGIN_SOLUTION, END_SOLUTION):
            out |= nontrivial(region, cell.cell_type)
    return out


def hidden_lines(nb: nbformat.NotebookNode) -> set[str]:
    """Non-trivial lines inside ``BEGIN HIDDEN TESTS`` regions."""
    out: set[str] = set()
    for cell in nb.cells:
        for region in _regions(cell.source, BEGIN_HIDDEN, END_HIDDEN):
            out |= nontrivial(region, cell.cell_type)
    return out


def public_lines(nb: nbformat.NotebookNode) -> set[str]:
    """Non-trivial lines of the source outside any solution or hidden region (legitimately in the release)."""
    out: set[str] = set()
    for cell in nb.cells:
        inside = False
        keep = []
        for line in cell.source.splitlines():
            if BEGIN_SOLUTION in line or BEGIN_HIDDEN in line:
                inside = True
            elif END_SOLUTION in line or END_HIDDEN in line:
                inside = False
            elif not inside:
                keep.append(line)
        out |= nontrivial(keep, cell.cell_type)
    return out


def declared_names(nb: nbformat.NotebookNode) -> dict[str, list[str]]:
    """Answer cell grade_id -> the top-level names the course's own answer cell defines (functions, classes,
    assignments, imports): the names an exercise declares, and the only ones of a student's answer the
    trusted side of a split grading run binds (issue 32). Read from the source, never from a submission."""
    import ast

    out: dict[str, list[str]] = {}
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        if cell.cell_type != "code" or not meta.get("solution") or not grade_id(cell):
            continue
        names: list[str] = []
        for node in ast.parse(cell.source).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.append(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names += [t.id for t in targets if isinstance(t, ast.Name)]
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names += [(a.asname or a.name).split(".")[0] for a in node.names]
        out[grade_id(cell)] = list(dict.fromkeys(names))
    return out
