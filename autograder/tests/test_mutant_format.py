"""The mutant edit format (``autograder/mutants.py``): every mutant applies to today's reference, anchors are
strict, and mutants stay small. Fast: no kernels, only the sources are read."""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder.config import CourseConfig
from autograder.mutants import (
    FIND,
    REPLACE,
    SEP,
    Edit,
    apply_edits,
    copy_extras,
    find_mutants,
    parse_mutant,
    read_mutant,
    reference_texts,
)
from autograder.rubrics import load_rubric

CFG = CourseConfig()
# The full-copy mutants took 4,362 lines for 123 mutants (35 a mutant); as hunks of the same edits 1,305 (11).
# Issue 27 asks for a mutant per requirement line, so the count grows with the requirements: the budget is per
# mutant (a small edit stays small), not a total that each new requirement would push against.
MEAN_LINE_BUDGET = 12  # mean lines per mutant file, header included (269 mutants: 8.9 on 2026-12-02)
MAX_LINES = 60  # one mutant; the largest (a homework module's non-atomic save, 4 hunks) is 58
HEADER = "# mutant: m\n# exercise: ex\n# replaces: cell\n# why: because\n"


def block(find: str, replace: str) -> str:
    """One edit block; an empty ``replace`` deletes the found lines."""
    return "\n".join([FIND, find, SEP, *([replace] if replace else []), REPLACE]) + "\n"


def write(tmp_path: Path, body: str, header: str = HEADER) -> Path:
    p = tmp_path / "m.py"
    p.write_text(header + body, encoding="utf-8")
    return p


@pytest.mark.parametrize("lab", CFG.lab_ids())
def test_every_mutant_parses_applies_and_changes_the_reference(lab: str) -> None:
    files = sorted((CFG.mutants / lab).glob("*.py"))
    mutants = find_mutants(CFG, lab)  # raises on any mutant that no longer applies
    assert [m.path for m in mutants] == files, ([m.path.name for m in mutants], [p.name for p in files])
    ref = reference_texts(CFG, lab)
    for m in mutants:
        assert m.name == m.path.stem, (m.path, m.name)
        assert m.source != ref[m.replaces], f"{m.path}: its source equals the reference {m.replaces!r}"
        if m.is_file_mutant:
            assert (CFG.solutions / lab / m.replaces).is_file(), (m.path, m.replaces)


def test_line_budget() -> None:
    files = sorted(CFG.mutants.glob("*/*.py"))
    assert files, f"no mutants under {CFG.mutants}"
    sizes = {p: p.read_text(encoding="utf-8").count("\n") for p in files}
    big = {str(p.relative_to(CFG.mutants)): n for p, n in sizes.items() if n > MAX_LINES}
    assert not big, f"mutants over {MAX_LINES} lines (write the edit as hunks, not a copy): {big}"
    mean = sum(sizes.values()) / len(files)
    assert mean <= MEAN_LINE_BUDGET, (
        f"{len(files)} mutants take {sum(sizes.values())} lines, {mean:.1f} a mutant; "
        f"budget {MEAN_LINE_BUDGET}"
    )


@pytest.mark.parametrize(
    ("ref", "bad_find", "times"),
    [("a = 1\nb = 2\n", "c = 3", 0), ("x = 0\nx = 0\nb = 2", "x = 0", 2)],
    ids=["absent", "twice"],
)
def test_anchor_not_found_exactly_once_names_mutant_block_and_count(
    tmp_path: Path, ref: str, bad_find: str, times: int
) -> None:
    p = write(tmp_path, block("b = 2", "z = 9") + block(bad_find, "w = 8"))  # block 1 applies, block 2 not
    with pytest.raises(ValueError) as err:
        parse_mutant(p, "lab", {"cell": ref})
    msg = str(err.value)
    for want in (str(p), "block 2", f"occurs {times} times"):
        assert want in msg, (want, msg)


def test_edits_are_whole_lines_located_in_the_unedited_text(tmp_path: Path) -> None:
    ref = "def f(x):\n    y = x + 1\n    return y\n\nprint(f(1))"
    p = write(
        tmp_path,
        block("    y = x + 1", "    y = x - 1")  # a change
        + "\n"
        + block("print(f(1))", "print(f(1))\nprint(f(2))")  # an insertion anchored on one line
        + block("    return y\n", "    return y"),  # a deletion (of the blank line)
    )
    m = parse_mutant(p, "lab", {"cell": ref})
    want = "def f(x):\n    y = x - 1\n    return y\nprint(f(1))\nprint(f(2))"
    assert m.source == want, (m.source, want)
    # "x + 1" is part of a line, not a whole line: no match
    with pytest.raises(ValueError, match="occurs 0 times"):
        apply_edits(ref, [Edit(("x + 1",), ("x - 1",))], "m.py")
    # a find that only the previous edit's replacement would create is not found: finds see the reference
    with pytest.raises(ValueError, match="block 2.*occurs 0 times"):
        apply_edits(ref, [Edit(("print(f(1))",), ("g = 1",)), Edit(("g = 1",), ("g = 2",))], "m.py")


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (block("a = 1", "a = 1"), "unchanged"),
        (block("a = 1\nb = 2", "c") + block("b = 2", "d"), "blocks 1 and 2 find overlapping lines"),
        (f"{FIND}\n{SEP}\nz = 1\n{REPLACE}\n", "block 1 has an empty find"),
        (f"{FIND}\na = 1\n{SEP}\nz = 1\n", "block 1 is not closed"),
        ("a = 2\n", "expected '<<<<<<< find'"),
        ("", "no edit blocks"),
        (f"{FIND}\na = 1\n{FIND}\n", "inside the find of block 1"),
    ],
    ids=["unchanged", "overlap", "empty-find", "unclosed", "stray-text", "no-blocks", "marker-in-find"],
)
def test_malformed_or_empty_edits_raise(tmp_path: Path, body: str, match: str) -> None:
    p = write(tmp_path, body)
    with pytest.raises(ValueError, match=match) as err:
        parse_mutant(p, "lab", {"cell": "a = 1\nb = 2"})
    assert str(p) in str(err.value), err.value


def test_header_continuation_lines_extend_why_and_unknown_targets_raise(tmp_path: Path) -> None:
    header = HEADER.replace("# why: because\n", "# why: because\n#      it is wrong\n")
    p = write(tmp_path, block("a = 1", "a = 2"), header)
    head, edits = read_mutant(p)
    assert head["why"] == "because it is wrong" and edits == [Edit(("a = 1",), ("a = 2",))], (head, edits)
    with pytest.raises(ValueError, match="replaces 'cell', which is not an answer cell of lab") as err:
        parse_mutant(p, "lab", {"other": "a = 1"})
    assert str(p) in str(err.value), err.value
    p2 = write(tmp_path, block("a = 1", "a = 2"), HEADER + "# why: twice\n")
    with pytest.raises(ValueError, match="a second '# why:' line"):
        read_mutant(p2)


def test_file_mutant_module_is_written_over_its_copy(tmp_path: Path) -> None:
    m = next(m for m in find_mutants(CFG, "homework") if m.is_file_mutant)
    copy_extras(CFG, "homework", tmp_path, m)
    head, _, rest = m.replaces.partition("/")
    rename = load_rubric(CFG.rubric / "homework.yaml").submit_as  # submitted as the student's package name
    got = (tmp_path / rename.get(head, head) / rest).read_text(encoding="utf-8")
    assert got == m.source != (CFG.solutions / "homework" / m.replaces).read_text(encoding="utf-8"), m.name


def test_hunks_read_back_to_the_same_edits_and_are_strict(tmp_path: Path) -> None:
    from autograder.mutants import format_hunks

    ref = "def f(x):\n    y = x + 1\n\n    return y\n"
    p = write(tmp_path, "@@\n     y = x + 1\n-\n-    return y\n+    return y * 2\n")
    assert parse_mutant(p, "lab", {"cell": ref}).source == "def f(x):\n    y = x + 1\n    return y * 2\n"
    _, edits = read_mutant(p)
    again = write(tmp_path, format_hunks(edits))
    assert parse_mutant(again, "lab", {"cell": ref}).source == parse_mutant(p, "lab", {"cell": ref}).source
    for bad, why in (
        ("@@\n x = 1\n", "changes nothing"),
        ("@@\n+z = 1\n", "finds nothing"),
        ("@@\n*x\n", "starts with"),
    ):
        with pytest.raises(ValueError, match=why):
            read_mutant(write(tmp_path, bad))
