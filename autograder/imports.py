"""The grader's import map: which ``autograder`` module reaches which, read from the sources.

Counted as an edge: ``import``/``from`` at any depth (inside functions too), relative imports (``from .x
import``), and subprocess entry points - a string ``"autograder.x"`` right after ``"-m"``, and the imports in
a ``-c`` program string. ``python -m autograder.imports --write`` puts the map into DESIGN.md between markers;
``autograder/tests/test_structure.py`` fails on a cycle or a stale map.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- import-map:begin -->", "<!-- import-map:end -->"


def modules(root: Path = ROOT) -> dict[str, Path]:
    return {
        ".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__"): p
        for p in (root / "autograder").rglob("*.py")
        if "tests" not in p.parts and "mutants" not in p.parts and "valid" not in p.parts
    }


def _names(node: ast.AST, here: str, is_pkg: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            parts = here.split(".")
            parts = parts if is_pkg else parts[:-1]
            parts = parts[: len(parts) - (node.level - 1)]
            base = ".".join([*parts, base] if base else parts)
        return [base, *(f"{base}.{a.name}" for a in node.names)]
    return []


def _entry_points(tree: ast.AST) -> list[str]:
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple)):
            items = node.elts
            for a, b in zip(items, items[1:], strict=False):
                if isinstance(a, ast.Constant) and isinstance(b, ast.Constant) and isinstance(b.value, str):
                    if a.value == "-m":
                        out.append(b.value)
                    elif a.value == "-c":
                        try:
                            out += [n for sub in ast.walk(ast.parse(b.value)) for n in _names(sub, "", False)]
                        except SyntaxError:
                            pass
    return out


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    mods = modules(root)
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        tree = ast.parse(p.read_text())
        found = [n for node in ast.walk(tree) for n in _names(node, m, p.name == "__init__.py")]
        found += _entry_points(tree)
        edges[m] |= {x for x in found if x in mods and x != m and x != "autograder"}
    return edges


def render(edges: dict[str, set[str]]) -> str:
    short = {m: m.removeprefix("autograder.") for m in edges}
    leaves = sorted(short[m] for m, e in edges.items() if not e and m != "autograder")
    lines = [f"Leaves (import no other grader module): {', '.join(f'`{x}`' for x in leaves)}.", ""]
    for m in sorted(edges, key=lambda x: short[x]):
        if edges[m] and m != "autograder":
            lines.append(f"- `{short[m]}` -> " + ", ".join(f"`{short[x]}`" for x in sorted(edges[m])))
    return "\n".join(lines)


def replace_section(path: Path, begin: str, end: str, body: str) -> bool:
    """Put ``body`` between the markers ``begin`` and ``end`` of ``path`` (a generated section of a doc);
    returns whether anything changed. A ValueError names missing markers."""
    text = path.read_text(encoding="utf-8")
    if begin not in text or end not in text:
        raise ValueError(f"{path}: no {begin} ... {end} markers")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    new = f"{head}{begin}\n{body}\n{end}{tail}"
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


def write_design(root: Path = ROOT) -> bool:
    return replace_section(root / "DESIGN.md", BEGIN, END, render(import_graph(root)))


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        print("DESIGN.md " + ("updated" if write_design() else "already up to date"))
    else:
        print(render(import_graph()))
