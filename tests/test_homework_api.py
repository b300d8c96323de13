"""The homework's contracts that need no process group: skeleton API = reference API, stubs name their task,
rubric <-> notebook, hints, mutant headers. Run: .venv/bin/python -m pytest tests/test_homework_api.py -q"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
REF_DIR = ROOT / "solutions" / "homework"
MUTANTS = sorted((ROOT / "autograder" / "mutants" / "homework").glob("*.py"))
if str(REF_DIR) not in sys.path:
    # appended, not prepended: solutions/homework/homework.py (the notebook source) must not shadow the
    # skeleton package `homework` at the repo root
    sys.path.append(str(REF_DIR))


def _public(module) -> dict[str, str]:
    """name -> signature (functions, classes, methods) of what the module defines itself."""
    out = {}
    for name, obj in vars(module).items():
        if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
            continue
        if inspect.isfunction(obj):
            out[name] = str(inspect.signature(obj))
        elif inspect.isclass(obj):
            out[name] = "class"
            for m, f in vars(obj).items():
                if inspect.isfunction(f) and (
                    not m.startswith("_") or m in ("__init__", "__iter__", "__len__")
                ):
                    out[f"{name}.{m}"] = str(inspect.signature(f))
                elif isinstance(f, property):
                    out[f"{name}.{m}"] = "property"
    return out


def _modules(folder: Path) -> list[str]:
    return sorted(p.stem for p in folder.glob("*.py"))


def test_skeleton_has_the_reference_modules():
    assert _modules(ROOT / "homework") == _modules(REF_DIR / "fttrainer")


@pytest.mark.parametrize("mod", _modules(REF_DIR / "fttrainer"))
def test_skeleton_api_identical(mod):
    suffix = "" if mod == "__init__" else f".{mod}"
    ref = _public(importlib.import_module(f"fttrainer{suffix}"))
    skel = _public(importlib.import_module(f"homework{suffix}"))
    assert set(ref) == set(skel), (
        f"{mod}: only in reference {set(ref) - set(skel)}, only in skeleton {set(skel) - set(ref)}"
    )
    for name in ref:
        assert ref[name] == skel[name], f"{mod}.{name}: reference {ref[name]} vs skeleton {skel[name]}"


def test_package_exports_identical():
    import fttrainer

    import homework
    import homework.trainer

    assert fttrainer.__all__ == homework.__all__


def test_skeleton_is_generated_from_the_reference():
    r = subprocess.run(
        [sys.executable, str(REF_DIR / "make_skeleton.py"), "--check"], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stdout + r.stderr


def _rubric_ids() -> set[str]:
    return {
        e["id"] for e in yaml.safe_load((ROOT / "autograder/rubric/homework.yaml").read_text())["exercises"]
    }


def test_every_stub_raises_naming_a_rubric_task():
    spec = importlib.util.spec_from_file_location("make_skeleton", REF_DIR / "make_skeleton.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    TASKS = gen.TASKS

    ids = _rubric_ids()
    for (mod, qual), (task, _) in TASKS.items():
        assert task in ids, f"{mod}.{qual}: task {task!r} is not a rubric item {sorted(ids)}"
        src = (ROOT / "homework" / f"{mod}.py").read_text()
        tree = ast.parse(src)
        found = [
            n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == qual.split(".")[-1]
        ]
        assert found, f"{mod}.{qual} missing from the skeleton"
        body = ast.get_source_segment(src, found[0])
        assert "NotImplementedError(" in body and f'"homework task {task}:' in body, body


def test_stub_really_raises():
    import homework
    import homework.trainer

    with pytest.raises(NotImplementedError, match="homework task ddp"):
        homework.grad_accum_steps(64, 16, 2)
    with pytest.raises(NotImplementedError, match="homework task recovery"):
        homework.trainer.train(homework.TrainConfig())
    with pytest.raises(NotImplementedError, match="homework task metrics"):
        homework.straggler_report(None)


def test_rubric_agrees_with_notebook():
    from autograder.rubrics import load_rubric, rubric_problems
    from autograder.source import graded_cells, read_source, solution_cells

    nb = read_source(REF_DIR / "homework.py")
    rubric = load_rubric(ROOT / "autograder/rubric/homework.yaml")
    assert rubric.total == 100
    assert rubric_problems(rubric, graded_cells(nb), set(solution_cells(nb))) == []


def test_hints_three_per_item_and_no_solution_lines_in_stages_1_2():
    from autograder.source import nontrivial, normalize_line

    hints = yaml.safe_load((REF_DIR / "hints.yaml").read_text())
    assert set(hints) == {f"homework.{i}" for i in _rubric_ids()}
    ref_lines = set()
    for p in (REF_DIR / "fttrainer").glob("*.py"):
        ref_lines |= {normalize_line(ln) for ln in p.read_text().splitlines() if nontrivial(ln)}
    for hid, stages in hints.items():
        assert len(stages) == 3 and all(isinstance(s, str) and s.strip() for s in stages), hid
        for stage in stages[:2]:
            leaked = [ln for ln in ref_lines if ln and ln in normalize_line(stage)]
            assert not leaked, f"{hid}: stage 1-2 hint contains reference lines {leaked[:3]}"


def test_every_auto_item_has_a_mutant():
    rubric = yaml.safe_load((ROOT / "autograder/rubric/homework.yaml").read_text())
    auto = {ex["id"] for ex in rubric["exercises"] if any(c["kind"] == "auto" for c in ex["graded_cells"])}
    covered = {
        ln.split(":", 1)[1].strip()
        for m in MUTANTS
        for ln in m.read_text().splitlines()[:3]
        if ln.startswith("# exercise:")
    }
    assert auto <= covered, f"auto-graded items without a mutant: {sorted(auto - covered)}"


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda p: p.stem)
def test_mutant_header_and_application(mutant, tmp_path):
    from autograder.mutants import apply_mutant

    head = {
        ln.split(":", 1)[0].lstrip("# ").strip(): ln.split(":", 1)[1].strip()
        for ln in mutant.read_text().splitlines()[:4]
    }
    assert head["mutant"] == mutant.stem and head["exercise"] in _rubric_ids(), head
    if not head["replaces"].split()[0].endswith(".py"):  # a notebook-cell mutant (the card)
        from autograder.source import read_source, solution_cells

        assert head["replaces"] in solution_cells(read_source(REF_DIR / "homework.py")), head
        return
    pkg = apply_mutant(mutant, REF_DIR / "fttrainer", tmp_path)
    r = subprocess.run(
        [sys.executable, "-c", "import fttrainer, sys; print(fttrainer.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert r.returncode == 0 and str(pkg) in r.stdout, r.stderr
