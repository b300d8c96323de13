"""Known-wrong answers (``autograder/mutants/<lab>/<name>.py``) and the sample submissions built from them.

A mutant is a header and one or more edits of the reference (DESIGN.md, "Mutants")::

    # mutant: broadcast_params_only
    # exercise: replicas             (the ONLY rubric exercise whose auto points it must lose)
    # replaces: broadcast_solution   (an answer cell's grade_id, or a module: fttrainer/ddp.py)
    # why: broadcasts parameters but not buffers
    #      (further comment lines continue ``why``)
    # hidden-only: <why>             (optional: the visible tests cannot catch it, e.g. a seed-dependent case)
    @@
    -        for t in [*model.parameters(), *model.buffers()]:
    +        for t in list(model.parameters()):

Each edit is a hunk: ``@@``, then lines prefixed ``' '`` (context), ``'-'`` (found and removed) or ``'+'``
(added); blocks ``<<<<<<< find`` / ``=======`` / ``>>>>>>> replace`` are read too (:func:`format_hunks`
writes any edit as a hunk).

The edits apply to the reference's text: the answer cell's source in the source notebook
(:func:`source_notebook`) or the module's text (``solutions/<lab>/<replaces>``). Each find is whole lines
that must occur exactly once in that text (an insertion anchors on at least one line); the finds must not
overlap; all are located in the unedited text and replaced together. Anything else raises ``ValueError``
naming the mutant file and the block. A fix to a reference cell therefore reaches every mutant of it, and a
mutant whose anchor the fix removed stops loading instead of testing stale code.

:class:`Mutant` ``.source`` is the complete mutated text (the cell's source, or the whole module, which
:func:`copy_extras` writes over the module's copy).

Without ``hidden-only`` a mutant must fail the *visible* part of its own exercise's tests (DESIGN.md,
"Honest visible tests"); :mod:`autograder.mutant_check` checks that.
"""

from __future__ import annotations

import copy
import logging
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import nbformat

from autograder.config import CourseConfig
from autograder.source import grade_id, nbgrader_meta

log = logging.getLogger("autograder.mutants")
HEADER_KEYS = ("mutant", "exercise", "replaces", "why")
OPTIONAL_KEYS = ("hidden-only",)
FREE_TEXT_KEYS = ("why", "hidden-only")  # may run on over further comment lines
FIND, SEP, REPLACE = "<<<<<<< find", "=======", ">>>>>>> replace"
_KEY_LINE = re.compile(r"^#\s*(" + "|".join(map(re.escape, HEADER_KEYS + OPTIONAL_KEYS)) + r")\s*:(.*)$")


@dataclass(frozen=True)
class Mutant:
    lab: str
    name: str
    exercise: str
    replaces: str
    why: str
    source: str  # the complete mutated text: the edits applied to the reference cell or module
    path: Path
    hidden_only: str = ""  # why the visible tests cannot catch it ("" = they must)
    valid: bool = False  # a correct answer written differently (autograder/valid/): it must keep every point

    @property
    def is_file_mutant(self) -> bool:
        """True when ``replaces`` names a file beside the source (e.g. the homework's
        ``fttrainer/sampler.py``): ``source`` is then the whole mutated module, written over its copy."""
        return is_file_target(self.replaces)


@dataclass(frozen=True)
class Edit:
    """One find/replace block: whole lines of the reference, and the lines that take their place."""

    find: tuple[str, ...]
    replace: tuple[str, ...]


def is_file_target(replaces: str) -> bool:
    return "/" in replaces or replaces.endswith(".py")


def read_mutant(path: Path) -> tuple[dict[str, str], list[Edit]]:
    """The header (keys as in :data:`HEADER_KEYS`) and the edit blocks of a mutant file, checked for form
    only (whether the edits apply depends on the reference: :func:`apply_edits`)."""
    lines = Path(path).read_text(encoding="utf-8").split("\n")
    header: dict[str, str] = {}
    key = None
    n = 0
    for n, line in enumerate(lines):
        s = line.strip()
        if not s:
            continue
        if not s.startswith("#"):
            break
        hit = _KEY_LINE.match(s)
        if hit:
            key, value = hit.group(1), hit.group(2).strip()
            if key in header:
                raise ValueError(f"{path}: header line {n + 1}: a second '# {key}:' line")
            header[key] = value if key in FREE_TEXT_KEYS else value.split("(", 1)[0].strip()
        elif key in FREE_TEXT_KEYS:
            header[key] = f"{header[key]} {s.lstrip('#').strip()}".strip()
        else:
            raise ValueError(
                f"{path}: header line {n + 1} is neither '# <key>: ...' nor a continuation of 'why' or "
                f"'hidden-only': {line!r}"
            )
    else:
        n = len(lines)
    missing = [k for k in HEADER_KEYS if not header.get(k)]
    if missing:
        raise ValueError(
            f"{path}: mutant header lacks {missing}; expected lines '# mutant: ...', '# exercise: ...', "
            "'# replaces: <grade_id>', '# why: ...' at the top"
        )
    if "hidden-only" in header and not header["hidden-only"]:
        raise ValueError(f"{path}: '# hidden-only:' needs a reason (why the visible tests cannot catch it)")
    return header, _read_blocks(path, lines, n)


HUNK = "@@"


def _read_hunks(path: Path, lines: list[str], start: int) -> list[Edit]:
    """Edits written as diff hunks: each starts with a line ``@@``, then lines prefixed ``' '`` (context: in
    the find and kept), ``'-'`` (found and removed) or ``'+'`` (added); an empty line is empty context. Blank
    lines that end a hunk are dropped (context in both halves: they change nothing)."""
    edits: list[Edit] = []
    hunk: list[str] | None = None

    def close() -> None:
        if hunk is None:
            return
        while hunk and hunk[-1] == "":
            hunk.pop()
        find = tuple(ln[1:] if ln else "" for ln in hunk if not ln.startswith("+"))
        repl = tuple(ln[1:] if ln else "" for ln in hunk if not ln.startswith("-"))
        if not find:
            raise ValueError(
                f"{path}: hunk {len(edits) + 1} finds nothing (an insertion needs a context line)"
            )
        if find == repl:
            raise ValueError(f"{path}: hunk {len(edits) + 1} changes nothing (no '-' or '+' line)")
        edits.append(Edit(find, repl))

    for n in range(start, len(lines)):
        line = lines[n]
        if line == HUNK:
            close()
            hunk = []
        elif hunk is None:
            if line.strip():
                raise ValueError(f"{path}: line {n + 1}: expected {HUNK!r} to start a hunk, got {line!r}")
        elif line == "" or line[0] in " -+":
            hunk.append(line)
        else:
            raise ValueError(
                f"{path}: line {n + 1}: a hunk line starts with ' ', '-' or '+' (or is empty), got {line!r}"
            )
    close()
    if not edits:
        raise ValueError(f"{path}: no hunks after the header (expected {HUNK!r} lines)")
    return edits


def format_hunks(edits: list[Edit]) -> str:
    """``edits`` written as hunks (:func:`_read_hunks` reads them back to the same edits)."""
    import difflib

    out: list[str] = []
    for e in edits:
        out.append(HUNK)
        ops = difflib.SequenceMatcher(None, e.find, e.replace, autojunk=False).get_opcodes()
        for tag, i1, i2, j1, j2 in ops:
            if tag == "equal":
                out += [f" {ln}" if ln else "" for ln in e.find[i1:i2]]
            else:
                out += [f"-{ln}" for ln in e.find[i1:i2]] + [f"+{ln}" for ln in e.replace[j1:j2]]
    return "\n".join(out) + "\n"


def _read_blocks(path: Path, lines: list[str], start: int) -> list[Edit]:
    first = next((ln for ln in lines[start:] if ln.strip()), "")
    if first == HUNK:
        return _read_hunks(path, lines, start)
    edits: list[Edit] = []
    state, find, repl = "out", [], []
    for n in range(start, len(lines)):
        line = lines[n]
        if state == "out":
            if line == FIND:
                state, find, repl = "find", [], []
            elif line.strip():
                raise ValueError(f"{path}: line {n + 1}: expected {FIND!r} or a blank line, got {line!r}")
        elif state == "find":
            if line == SEP:
                state = "replace"
            elif line in (FIND, REPLACE):
                raise ValueError(f"{path}: line {n + 1}: {line!r} inside the find of block {len(edits) + 1}")
            else:
                find.append(line)
        elif line == REPLACE:
            if not find:
                raise ValueError(
                    f"{path}: block {len(edits) + 1} has an empty find (an insertion needs an anchor line)"
                )
            edits.append(Edit(tuple(find), tuple(repl)))
            state = "out"
        elif line in (FIND, SEP):
            raise ValueError(
                f"{path}: line {n + 1}: {line!r} inside the replacement of block {len(edits) + 1}"
            )
        else:
            repl.append(line)
    if state != "out":
        raise ValueError(f"{path}: block {len(edits) + 1} is not closed by {REPLACE!r}")
    if not edits:
        raise ValueError(f"{path}: no edit blocks after the header (expected {FIND!r} ... {REPLACE!r})")
    return edits


def apply_edits(text: str, edits: list[Edit], where: str, target: str = "the reference") -> str:
    """``text`` with every edit applied. Each find must occur exactly once (whole lines) in the unedited
    ``text`` and no two may overlap; else ``ValueError`` naming ``where`` (the mutant file) and the block."""
    lines = text.split("\n")
    spans: list[tuple[int, int, int]] = []
    for k, e in enumerate(edits, 1):
        width = len(e.find)
        at = [i for i in range(len(lines) - width + 1) if tuple(lines[i : i + width]) == e.find]
        if len(at) != 1:
            raise ValueError(
                f"{where}: block {k}: its find ({width} line(s), first {e.find[0]!r}) occurs {len(at)} times "
                f"in {target}; it must occur exactly once"
            )
        spans.append((at[0], at[0] + width, k))
    spans.sort()
    for (_, end, k1), (begin, _, k2) in zip(spans, spans[1:], strict=False):
        if begin < end:
            raise ValueError(f"{where}: blocks {k1} and {k2} find overlapping lines of {target}")
    for begin, end, k in reversed(spans):
        lines[begin:end] = edits[k - 1].replace
    return "\n".join(lines)


def parse_mutant(path: Path, lab: str, reference: Mapping[str, str]) -> Mutant:
    """Read a mutant and apply it. ``reference`` maps what a mutant may replace to its text: answer cells'
    grade ids to their source, and module paths relative to ``solutions/<lab>/`` to theirs
    (:func:`reference_texts` builds it)."""
    header, edits = read_mutant(path)
    target = header["replaces"]
    if target not in reference:
        kind = (
            f"a file beside solutions/{lab}/{lab}.py"
            if is_file_target(target)
            else f"an answer cell of {lab}"
        )
        raise ValueError(f"{path}: replaces {target!r}, which is not {kind}")
    source = apply_edits(reference[target], edits, str(path), repr(target))
    if source == reference[target]:
        raise ValueError(f"{path}: its edits leave {target!r} unchanged")
    return Mutant(
        lab,
        header["mutant"],
        header["exercise"],
        target,
        header["why"],
        source,
        Path(path),
        header.get("hidden-only", ""),
    )


def reference_texts(cfg: CourseConfig, lab: str) -> dict[str, str]:
    """What a mutant of ``lab`` may edit: every answer cell's source by grade id, and every module beside the
    source by its path relative to ``solutions/<lab>/`` (e.g. ``fttrainer/sampler.py``)."""
    texts = {
        gid: c.source
        for c in source_notebook(cfg, lab).cells
        if nbgrader_meta(c).get("solution") and (gid := grade_id(c))
    }
    root = cfg.solutions / lab
    for p in sorted(root.rglob("*.py")):
        rel = p.relative_to(root).as_posix()
        if rel != f"{lab}.py" and "__pycache__" not in p.parts:
            texts[rel] = p.read_text(encoding="utf-8")
    return texts


def find_mutants(cfg: CourseConfig, lab: str) -> list[Mutant]:
    d = cfg.mutants / lab
    if not d.is_dir():
        return []
    ref = reference_texts(cfg, lab)
    return [parse_mutant(p, lab, ref) for p in sorted(d.glob("*.py"))]


VALID_KEYS = ("valid", "exercise", "replaces", "why")
_VALID_LINE = re.compile(r"^#\s*(" + "|".join(VALID_KEYS) + r")\s*:(.*)$")


def parse_valid(path: Path, lab: str, reference: Mapping[str, str]) -> Mutant:
    """A valid variant (``autograder/valid/<lab>/<name>.py``): a header - ``# valid: <name>``,
    ``# exercise: <rubric id>``, ``# replaces: <grade_id or module>``, ``# why:`` (comment lines continue
    it) - then the whole answer cell or module, or hunks of the reference (as a mutant). Checked by the
    same machinery as a mutant (:mod:`autograder.mutant_check`), with the opposite verdict: every cell must
    pass."""
    lines = Path(path).read_text(encoding="utf-8").split("\n")
    header: dict[str, str] = {}
    key, start = None, len(lines)
    for i, line in enumerate(lines):
        hit = _VALID_LINE.match(line.strip())
        if hit and hit.group(1) not in header:
            key = hit.group(1)
            header[key] = hit.group(2).strip()
        elif key == "why" and line.startswith("#"):
            header["why"] += " " + line.lstrip("#").strip()
        else:
            start = i
            break
    missing = [k for k in VALID_KEYS if not header.get(k)]
    if missing:
        raise ValueError(
            f"{path}: valid variant header lacks {missing}; expected '# valid:', '# exercise:', "
            "'# replaces:', '# why:' lines at the top"
        )
    target, body = header["replaces"], "\n".join(lines[start:]).strip("\n")
    if target not in reference:
        raise ValueError(f"{path}: replaces {target!r}, which is not an answer cell or module of {lab}")
    if body.split("\n", 1)[0] in (HUNK, FIND):  # written as edits of the reference, like a mutant
        body = apply_edits(reference[target], _read_blocks(path, lines, start), str(path), repr(target))
    if body.strip() == reference[target].strip():
        raise ValueError(f"{path}: its body is the reference itself, not a variant")
    if is_file_target(target):
        body += "\n"
    return Mutant(
        lab, header["valid"], header["exercise"], target, header["why"], body, Path(path), valid=True
    )


def find_valid(cfg: CourseConfig, lab: str) -> list[Mutant]:
    """The valid variants of ``lab`` (``autograder/valid/<lab>/*.py``, beside ``autograder/mutants/``)."""
    d = cfg.mutants.parent / "valid" / lab
    if not d.is_dir():
        return []
    ref = reference_texts(cfg, lab)
    return [parse_valid(p, lab, ref) for p in sorted(d.glob("*.py"))]


def find_checked(cfg: CourseConfig, lab: str) -> list[Mutant]:
    """Everything the exercise-level check runs for ``lab``: its mutants, then its valid variants."""
    return find_mutants(cfg, lab) + find_valid(cfg, lab)


def checked_problems(cfg: CourseConfig, labs: list[str]) -> list[str]:
    """Every mutant or valid variant of ``labs`` that does not parse or no longer applies to the reference
    (a stale anchor after an edit of the reference), one message each naming the file: checked before
    ``make course`` or the mutant check starts, so a broken file stops nothing half way."""
    out = []
    for lab in labs:
        valid = cfg.mutants.parent / "valid" / lab
        for kind, folder in (("mutant", cfg.mutants / lab), ("valid variant", valid)):
            if not folder.is_dir():
                continue
            ref = reference_texts(cfg, lab)
            parse = parse_mutant if kind == "mutant" else parse_valid
            for path in sorted(folder.glob("*.py")):
                try:
                    parse(path, lab, ref)
                except (ValueError, KeyError) as exc:
                    out.append(f"{kind} {path.relative_to(cfg.root)}: {exc}")
    return out


def source_notebook(cfg: CourseConfig, lab: str) -> nbformat.NotebookNode:
    """The instructor notebook (reference solutions + hidden tests), as release builds it."""
    from autograder.release import build_source_notebook

    return build_source_notebook(cfg, lab)


def release_notebook(cfg: CourseConfig, lab: str) -> nbformat.NotebookNode:
    return nbformat.read(cfg.nbgrader_root / "release" / lab / f"{lab}.ipynb", as_version=4)


def replace_cell(nb: nbformat.NotebookNode, gid: str, source: str) -> nbformat.NotebookNode:
    nb = copy.deepcopy(nb)
    hits = [c for c in nb.cells if grade_id(c) == gid]
    if len(hits) != 1:
        raise KeyError(f"expected one cell with grade_id {gid!r}, found {len(hits)}")
    hits[0].source = source
    return nb


def reference_submission(cfg: CourseConfig, lab: str) -> nbformat.NotebookNode:
    """The release with every answer cell filled in from the reference: what a perfect student submits."""
    sub = release_notebook(cfg, lab)
    ref = {grade_id(c): c.source for c in source_notebook(cfg, lab).cells if nbgrader_meta(c).get("solution")}
    for cell in sub.cells:
        if nbgrader_meta(cell).get("solution"):
            cell.source = ref[grade_id(cell)]
    return sub


def mutant_submission(cfg: CourseConfig, m: Mutant) -> nbformat.NotebookNode:
    """The notebook of a mutant sample (a file mutant's notebook is the reference; see
    :func:`apply_file_mutant`)."""
    if m.is_file_mutant:
        return reference_submission(cfg, m.lab)
    return replace_cell(reference_submission(cfg, m.lab), m.replaces, m.source)


def copy_extras(cfg: CourseConfig, lab: str, dest: Path, m: Mutant | None = None) -> None:
    """Files beside the source (a reference package, data) into ``dest``, folders renamed as the rubric's
    ``submit_as`` says (the way a student submits them); a file mutant's module is written over its copy."""
    from autograder.rubrics import load_rubric

    rubric_file = cfg.rubric / f"{lab}.yaml"
    rename = load_rubric(rubric_file).submit_as if rubric_file.exists() else {}
    dest.mkdir(parents=True, exist_ok=True)
    for item in sorted((cfg.solutions / lab).iterdir()):
        if item.name in (f"{lab}.py", "__pycache__") or item.suffix == ".ipynb":
            continue
        if item.is_dir():
            shutil.copytree(
                item,
                dest / rename.get(item.name, item.name),
                ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
                dirs_exist_ok=True,
            )
        else:
            shutil.copy2(item, dest / item.name)
    if m is not None and m.is_file_mutant:
        head, _, rest = m.replaces.partition("/")
        target = dest / (f"{rename.get(head, head)}/{rest}" if rest else m.replaces)
        if not target.is_file():
            raise KeyError(f"mutant {m.name}: {m.replaces} is not a file beside solutions/{lab}/{lab}.py")
        target.write_text(m.source, encoding="utf-8")


def apply_mutant(mutant: str | Path, reference: str | Path, dest: str | Path) -> Path:
    """Copy the reference package folder ``reference`` into ``dest`` and apply the mutant's find/replace
    edits to the module its header names (``# replaces: fttrainer/<module>.py``), written over the copy.
    Returns the copied package folder.

    It lives in the grader, not in ``course_dist`` (shipped to students): it runs where the grader runs
    (tests, an instructor's checkout), never inside a student's kernel."""
    import shutil

    header, edits = read_mutant(Path(mutant))
    rel = Path(header["replaces"])
    if rel.suffix != ".py":
        raise ValueError(f"{mutant}: replaces {header['replaces']!r}, not a '<package>/<module>.py'")
    ref = Path(reference)
    source = ref.parent / rel
    if not source.is_file():
        raise ValueError(f"{mutant}: replaces {rel}, which is not in {ref}")
    target = Path(dest) / ref.name
    shutil.copytree(ref, target, ignore=shutil.ignore_patterns("__pycache__"))
    text = apply_edits(source.read_text(encoding="utf-8"), edits, str(mutant), str(rel))
    (Path(dest) / rel).write_text(text, encoding="utf-8")
    return target
