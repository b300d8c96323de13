"""labs/ is exactly what `make release` makes from solutions/ (fresh, not hand-edited), and leaks nothing."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from _pipeline import CFG, LABS

from autograder.source import (
    BEGIN_HIDDEN,
    BEGIN_SOLUTION,
    hidden_lines,
    nbgrader_meta,
    normalize_line,
    public_lines,
    read_source,
    solution_lines,
)

pytestmark = pytest.mark.skipif(not LABS, reason="no lab sources under solutions/ yet")


@pytest.fixture(scope="module")
def fresh(fresh_release: Path) -> Path:
    """The session's fresh release (tests/conftest.py): one nbgrader generate_assignment per lab per run."""
    return fresh_release


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("lab", LABS)
def test_labs_are_fresh_and_untouched(fresh: Path, lab: str) -> None:
    want, have = _files(fresh / lab), _files(CFG.labs / lab) if (CFG.labs / lab).is_dir() else {}
    assert have, f"labs/{lab}/ is missing: run `make release`"
    assert sorted(have) == sorted(want), (
        f"labs/{lab}/ files {sorted(have)} != release {sorted(want)}: make release"
    )
    stale = [name for name in want if want[name] != have[name]]
    assert not stale, (
        f"labs/{lab}/{stale} differ from a fresh release (stale or hand-edited): run `make release`"
    )


def _release_lines(lab_dir: Path) -> tuple[set[str], str]:
    lines, raw = set(), ""
    for p in sorted(lab_dir.rglob("*")):
        if not p.is_file():
            continue
        if p.suffix == ".ipynb":
            nb = nbformat.read(p, as_version=4)
            for cell in nb.cells:
                raw += cell.source + "\n"
                lines |= {normalize_line(ln, cell.cell_type) for ln in cell.source.splitlines()}
        else:
            text = p.read_text(errors="replace")
            if p.name == "hints.yaml":  # stage 3 is the near-solution given on request (DESIGN.md, Hints)
                import yaml

                text = "\n".join(st for stages in yaml.safe_load(text).values() for st in stages[:2])
            raw += text
            lines |= {normalize_line(ln) for ln in text.splitlines()} | {
                " ".join(ln.split()) for ln in text.splitlines()
            }
    return lines, raw


@pytest.mark.parametrize("lab", LABS)
def test_no_solution_or_hidden_test_leaks(fresh: Path, lab: str) -> None:
    src = read_source(CFG.solutions / lab / f"{lab}.py")
    lines, raw = _release_lines(fresh / lab)
    for marker in (BEGIN_SOLUTION, BEGIN_HIDDEN, "END SOLUTION", "END HIDDEN TESTS"):
        assert marker not in raw, f"{lab}: marker {marker!r} in the release"
    public = public_lines(src)
    for kind, secret in (("solution", solution_lines(src)), ("hidden test", hidden_lines(src))):
        leaked = sorted((secret - public) & lines)
        assert not leaked, f"{lab}: {len(leaked)} {kind} line(s) in the release, e.g. {leaked[:3]}"
    code = [p.name for p in (fresh / lab).rglob("*.py")]
    assert not code, f"{lab}: Python files {code} released (reference code must not reach students)"


@pytest.mark.parametrize("lab", LABS)
def test_release_says_generated_and_stubs_name_the_task(fresh: Path, lab: str) -> None:
    nb = nbformat.read(fresh / lab / f"{lab}.ipynb", as_version=4)
    assert "Lab release" in nb.cells[0].source and f"solutions/{lab}/{lab}.py" in nb.cells[0].source
    assert nb.metadata["course"]["do_not_edit"] is True
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, cell.id
        if meta.get("solution") and cell.cell_type == "code":
            assert f'NotImplementedError("{lab}: implement {meta["grade_id"]}' in cell.source, cell.source
        if meta.get("solution") and cell.cell_type == "markdown":
            assert "YOUR ANSWER HERE" in cell.source, cell.source
