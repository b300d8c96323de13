"""The grader's structure: no import cycle in ``autograder/`` (imports inside functions count), docs that cite
nothing outside the repository, and every CLI flag the docs name exists."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _import_graph() -> dict[str, set[str]]:
    from autograder.imports import import_graph

    return import_graph(ROOT)


def test_design_holds_the_current_import_map() -> None:
    from autograder.imports import BEGIN, END, render

    inside = (ROOT / "DESIGN.md").read_text().split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert inside == render(_import_graph()).strip(), (
        "DESIGN.md's import map is stale: run `python -m autograder.imports --write` and commit it")


def test_the_map_sees_relative_imports_and_entry_points() -> None:
    edges = _import_graph()
    assert "autograder.worker" in edges["autograder.grade"], "grade starts `python -m autograder.worker`"


def test_no_import_cycle_in_autograder() -> None:
    edges = _import_graph()

    def reach(a: str) -> set[str]:
        seen, todo = set(), [a]
        while todo:
            for w in edges[todo.pop()]:
                if w not in seen:
                    seen.add(w)
                    todo.append(w)
        return seen

    cyclic = {m: sorted(e for e in edges[m] if m in reach(e)) for m in edges if m in reach(m)}
    assert not cyclic, f"autograder modules on an import cycle (module -> imports leading back): {cyclic}"


def test_nothing_cites_files_outside_the_repository() -> None:
    pattern = re.compile(r"measured\.md|shared/reference|\.\./shared")
    hits = []
    for d in ("autograder", "course_dist", "solutions", "homework", "bench", "tests"):
        for p in (ROOT / d).rglob("*"):
            if p.suffix in (".py", ".md", ".yaml") and "fixtures" not in p.parts and p != Path(__file__):
                for i, line in enumerate(p.read_text(errors="replace").splitlines(), 1):
                    if pattern.search(line) and "pattern = re.compile" not in line:
                        hits.append(f"{p.relative_to(ROOT)}:{i}: {line.strip()[:100]}")
    for p in ROOT.glob("*.md"):
        hits += [f"{p.name}: {ln.strip()[:100]}" for ln in p.read_text().splitlines() if pattern.search(ln)]
    assert not hits, "files outside the repository cited:\n" + "\n".join(hits)


def test_design_names_only_flags_the_cli_has() -> None:
    helps = ""
    for cmd in ([], ["grade"], ["release"], ["merge"], ["course"], ["mutants"]):
        r = subprocess.run(
            [sys.executable, "-m", "autograder", *cmd, "--help"], capture_output=True, text=True, cwd=ROOT
        )
        assert r.returncode == 0, (cmd, r.stderr[-500:])
        helps += r.stdout
    named = set(re.findall(r"`(--[a-z][a-z-]+)", (ROOT / "DESIGN.md").read_text()))
    missing = sorted(f for f in named if f not in helps)
    assert not missing, f"DESIGN.md names CLI flags that no --help shows: {missing}"
