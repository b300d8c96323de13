"""A static scan of answer cells for code that reaches into the grading machinery.

The grader runs only the answer cells (:mod:`autograder.rebuild`), but an answer cell still runs in the
process that records the evidence, so it could patch what the tests measure with: ``torch.allclose``, a
``course_dist`` helper, the evidence recorder, a drill of the lab's kit, the interpreter itself. No check
inside that process can be trusted to notice, so the trusted worker reads the answer cells' *text* before
anything runs. A finding never passes silently and never fails silently either: the exercise's points are
withheld and the row says ``needs_review`` with the offending line, for the instructor to clear::

    findings = scan(answer_cells={"sampler_solution": "..."}, module_names={"torch", "lab02", ...})
    # [Finding(grade_id, line, text, why)]

What is flagged, and why each is never part of an honest answer:

* assigning or deleting an attribute of a module (``torch.allclose = ...``, ``lab04.drill = ...``,
  ``course_dist.evidence.Evidence.equal = ...``) or of a name imported from ``course_dist``; ``setattr`` /
  ``delattr`` on one; ``vars(module)[...] = ...``;
* ``sys.modules``, ``builtins`` / ``__builtins__``, ``importlib``, ``__import__``, ``exec`` / ``eval`` /
  ``compile``, ``ctypes``, ``posix`` / ``_io`` (the C layers under ``os`` and ``open``, which the checkpoint
  drills' recorder does not see), ``gc``, frame objects (``sys._getframe``, ``inspect.currentframe``,
  ``f_globals``, ``f_locals``, ``f_back``), ``get_ipython`` (event hooks, custom exception handlers);
* any mention of the evidence recorder (``course_dist.evidence``, ``Evidence``, ``COURSE_EVIDENCE_DIR``,
  ``COURSE_GRADE_SEED``, ``grading_seed``).

Module names are the cell's own imports plus every name the notebook binds by ``import`` (``torch``, ``dist``,
``lab02``...). Assignments to ``torch.backends`` and pandas' display options are allowed, and so are items of
``os.environ`` or ``plt.rcParams``: they change numerics or display, not the grader (an environment variable
the grader reads is a ``COURSE_*`` string, flagged as such).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

FORBIDDEN_NAMES = {
    "__builtins__": "the interpreter's builtins",
    "builtins": "the interpreter's builtins",
    "importlib": "re-importing or replacing modules",
    "__import__": "importing by name",
    "exec": "running code built at run time",
    "eval": "running code built at run time",
    "compile": "running code built at run time",
    "ctypes": "raw memory access",
    "posix": "the C layer under os (it bypasses what the drills record)",
    "_io": "the C layer under open (it bypasses what the drills record)",
    "_posixsubprocess": "the C layer under subprocess",
    "gc": "reaching objects through the garbage collector",
    "get_ipython": "the notebook kernel's hooks",
    "Evidence": "the evidence recorder",
    "grading_seed": "the grading seed",
}
FORBIDDEN_ATTRS = {
    "modules": ("sys", "sys.modules"),
    "_getframe": ("sys", "frame objects"),
    "currentframe": ("inspect", "frame objects"),
    "stack": ("inspect", "frame objects"),
}
FRAME_ATTRS = {"f_globals", "f_locals", "f_back", "f_builtins", "tb_frame", "gi_frame", "cr_frame"}
FORBIDDEN_STRINGS = ("COURSE_EVIDENCE", "COURSE_GRADE_SEED", "course_dist.evidence")
# numerics and display switches (cudnn.deterministic, pandas' display width), not the grader
ALLOWED_TARGETS = ("torch.backends.", "pd.options.", "pandas.options.")


@dataclass(frozen=True)
class Finding:
    grade_id: str
    line: int  # 1-based, within the cell
    text: str  # the offending line, stripped
    why: str

    def __str__(self) -> str:
        return f"{self.grade_id} line {self.line}: `{self.text[:100]}` ({self.why})"


def _dotted(node: ast.AST) -> str:
    """'a.b.c' for a Name/Attribute chain, '' otherwise."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _root(node: ast.AST) -> str:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.value if not isinstance(node, ast.Call) else node.func
    return node.id if isinstance(node, ast.Name) else ""


def imported_names(source: str) -> tuple[set[str], set[str]]:
    """(names bound by the imports of ``source``, those of them imported from ``course_dist``)."""
    modules, from_course = set(), set()
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return modules, from_course
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                modules.add(a.asname or a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                name = a.asname or a.name
                if node.module.split(".")[0] == "course_dist":
                    from_course.add(name)
                # whatever an import binds is shared with the tests' code: a function, a class, a module
                modules.add(name)
    return modules, from_course


def scan_cell(grade_id: str, source: str, module_names: set[str], course_names: set[str]) -> list[Finding]:
    """Findings in one answer cell's source (a cell that does not parse has none: it fails when run)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    lines = source.splitlines()
    own_modules, own_course = imported_names(source)
    modules = module_names | own_modules
    protected = modules | course_names | own_course
    found: dict[tuple[int, str], Finding] = {}

    def flag(node: ast.AST, why: str) -> None:
        n = getattr(node, "lineno", 1)
        found.setdefault((n, why), Finding(grade_id, n, lines[n - 1].strip() if n <= len(lines) else "", why))

    def target(t: ast.AST, verb: str) -> None:
        if isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                target(e, verb)
        elif isinstance(t, ast.Attribute):
            name = _dotted(t)
            if _root(t) in protected and not name.startswith(ALLOWED_TARGETS):
                flag(t, f"{verb} an attribute of {_root(t)!r}, which the tests measure with")
        elif isinstance(t, ast.Subscript):
            base = t.value
            if isinstance(base, ast.Call) and _dotted(base.func) in ("vars", "globals"):
                flag(t, f"{verb} a namespace through {_dotted(base.func)}()")
            elif isinstance(base, ast.Attribute) and base.attr == "__dict__" and _root(t) in protected:
                flag(t, f"{verb} an item of {_dotted(base)!r}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                target(t, "assigns")
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            target(node.target, "assigns")
        elif isinstance(node, ast.Delete):
            for t in node.targets:
                target(t, "deletes")
        elif isinstance(node, ast.Call):
            fn = _dotted(node.func)
            if fn in ("setattr", "delattr") and node.args and _root(node.args[0]) in protected:
                flag(node, f"{fn}() on {_root(node.args[0])!r}, which the tests measure with")
        elif isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES:
            flag(node, f"uses {node.id} ({FORBIDDEN_NAMES[node.id]})")
        elif isinstance(node, ast.alias) and node.name.startswith("course_dist.evidence"):
            flag(node, "imports the evidence recorder")
        elif isinstance(node, ast.alias) and node.name.split(".")[0] in FORBIDDEN_NAMES:
            flag(node, f"imports {node.name} ({FORBIDDEN_NAMES[node.name.split('.')[0]]})")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in FORBIDDEN_NAMES:
            flag(node, f"imports from {node.module}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("course_dist.evidence"):
            flag(node, "imports the evidence recorder")
        elif isinstance(node, ast.Attribute):
            if node.attr in FRAME_ATTRS:
                flag(node, f"uses .{node.attr} (frame objects)")
            elif node.attr in FORBIDDEN_ATTRS and _root(node) == FORBIDDEN_ATTRS[node.attr][0]:
                flag(node, f"uses {_dotted(node)} ({FORBIDDEN_ATTRS[node.attr][1]})")
            elif node.attr == "evidence" and _root(node) in protected:
                flag(node, "uses the evidence recorder")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            hit = next((s for s in FORBIDDEN_STRINGS if s in node.value), None)
            if hit:
                flag(node, f"mentions {hit}")
    return sorted(found.values(), key=lambda f: (f.line, f.why))


def scan(answer_cells: dict[str, str], module_names: set[str], course_names: set[str]) -> list[Finding]:
    """Findings in every answer code cell (grade_id -> source)."""
    out: list[Finding] = []
    for gid, src in answer_cells.items():
        out += scan_cell(gid, src, module_names, course_names)
    return out


def scan_notebook(nb: object, answer_ids: set[str]) -> list[Finding]:
    """Findings in the answer code cells ``answer_ids`` of ``nb`` (module names from its other cells)."""
    from autograder.source import grade_id

    modules: set[str] = {"course_dist", "torch", "sys", "os", "builtins"}
    course: set[str] = set()
    answers = {}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if grade_id(cell) in answer_ids:
            answers[grade_id(cell)] = cell.source
        else:
            m, c = imported_names(cell.source)
            modules |= m
            course |= c
    return scan(answers, modules, course)


def withheld_points(cfg: object, lab: str, nb: object) -> tuple[dict[str, str], list[Finding]]:
    """({auto test grade_id: why its points are withheld}, findings) for notebook ``nb`` of ``lab``.

    A patch is live from the cell that makes it to the end of the notebook, so a finding withholds the points
    of every auto-graded test cell after its answer cell, not only its own exercise's."""
    from autograder.rubrics import load_rubric
    from autograder.source import grade_id
    from autograder.verdict import is_auto_test

    rubric = load_rubric(Path(cfg.rubric) / f"{lab}.yaml")
    answer_ids = {gid for ex in rubric.exercises for gid in ex.solution_cells}
    findings = scan_notebook(nb, answer_ids)
    pos = {grade_id(c): i for i, c in enumerate(nb.cells) if grade_id(c)}
    withheld: dict[str, str] = {}
    for f in sorted(findings, key=lambda f: pos.get(f.grade_id, 0)):
        for c in nb.cells[pos.get(f.grade_id, 0) :]:
            if is_auto_test(c):
                withheld.setdefault(grade_id(c), f"answer cell {f}")
    return withheld, findings
