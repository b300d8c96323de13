"""Correct answers written differently keep full marks (issue 27, item 6): the valid variants in
``autograder/valid/<lab>/`` run through the real checks on real process groups.

- lab01-lab05: every valid variant (an answer cell swapped into the reference notebook) is checked by the
  pipeline's exercise-level walk (``tests/_pipeline_grading.py::test_mutant_loses_its_exercise``,
  one parameter per variant: every test cell it reaches keeps its points, judged against the reference run);
  here only that the checker reads each one.
- homework ``checkpoint_part_rename``: every file written as ``<name>.part``, fsynced, renamed. The module
  replaces ``fttrainer/checkpoint.py`` in a copy of the reference package; the atomic item's checks
  (lab 04's publication rules on a recorded save, the world-2 two-phase facts, keep-last and a missing
  manifest) must give what they give on the reference.

Plus the fast facts under them: the trace counts torch's aliases of a collective as that collective with the
same bytes, and the publication rule follows a file through its renames without letting an unsynced one pass.

Run: .venv/bin/python -m pytest tests/test_valid_variants.py -x
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import cloudpickle
import pytest
import torch
import torch.distributed as dist

import course_dist
from course_dist.labkit import lab03, lab04

REPO = Path(__file__).resolve().parents[1]
VALID = REPO / "autograder" / "valid"
SEED = 0
cloudpickle.register_pickle_by_value(sys.modules[__name__])
pytestmark = pytest.mark.usefixtures("no_surviving_children")


def read_valid(path: Path) -> tuple[dict[str, str], str]:
    """The header (``valid``, ``exercise``, ``replaces``, ``why``) and the complete source of a valid variant
    (its whole text, or its hunks applied to the reference), read by the mutant checker's own parser."""
    from autograder.config import CourseConfig
    from autograder.mutants import parse_valid, reference_texts

    lab = path.parent.name
    m = parse_valid(path, lab, reference_texts(CourseConfig(), lab))
    return {"valid": m.name, "exercise": m.exercise, "replaces": m.replaces, "why": m.why}, m.source


def test_every_valid_variant_has_its_header():
    files = sorted(VALID.glob("*/*.py"))
    assert files, f"no valid variants under {VALID}"
    for f in files:
        header, _ = read_valid(f)
        assert header["valid"] == f.stem, f"{f}: '# valid: {header['valid']}', want the file name {f.stem!r}"


def test_the_mutant_checker_reads_every_valid_variant():
    """The exercise-level check (``python -m autograder mutants``, ``make course``) runs each variant with the
    opposite verdict of a mutant: it names a rubric exercise, and a cell variant replaces one of its cells."""
    from autograder.config import CourseConfig
    from autograder.mutants import find_valid
    from autograder.rubrics import load_rubric

    cfg = CourseConfig()
    seen = 0
    for lab in cfg.lab_ids():
        rubric = load_rubric(cfg.rubric / f"{lab}.yaml")
        for m in find_valid(cfg, lab):
            seen += 1
            ex = rubric.exercise(m.exercise)  # KeyError names an unknown exercise
            assert m.valid and (m.is_file_mutant or m.replaces in ex.solution_cells), (m.name, m.replaces)
    assert seen == len(sorted(VALID.glob("*/*.py"))), seen


# ---- lab03: the trace counts torch's aliases as the collective they name ----------------------------------
def _both_spellings() -> dict:
    world, rank = dist.get_world_size(), dist.get_rank()
    shard = torch.full((6,), float(rank))
    full = torch.empty(6 * world)
    grads = torch.arange(6.0 * world)
    out = torch.empty(6)
    dist.all_gather_single(full, shard)
    dist.reduce_scatter_single(out, grads)
    canonical = (full.clone(), out.clone())
    dist.all_gather_into_tensor(full, shard)
    dist.reduce_scatter_tensor(out, grads)
    return {"same": bool(torch.equal(full, canonical[0]) and torch.equal(out, canonical[1]))}


def test_trace_counts_aliases_as_their_collective_with_the_same_bytes():
    res = course_dist.launch(_both_spellings, 2, trace=True, timeout=120)
    assert [r["same"] for r in res] == [True, True], f"the two spellings gave different results: {res}"
    rows = res.trace[res.trace["rank"] == 0]
    got = list(zip(rows["op"], rows["called"], strict=True))
    ag, rs = "all_gather_single", "reduce_scatter_single"
    want = [(ag, ag), (rs, rs), (ag, "all_gather_into_tensor"), (rs, "reduce_scatter_tensor")]
    assert got == want, f"(op, called) per call on rank 0: got {got}, want {want}"
    counts = lab03.collective_counts(res.trace, 0)
    assert counts == {"all_gather_single": 2.0, "reduce_scatter_single": 2.0}, (
        f"collective_counts: got {counts}, want 2 all_gather_single and 2 reduce_scatter_single")
    t = lab03.traffic(res.trace, 2, 0).set_index("op")
    # 6 floats per shard at world 2: S = 48 bytes for each collective, the ring moves S / 2 per call
    want_ring = {"all_gather_single": 2 * 24.0, "reduce_scatter_single": 2 * 24.0}
    got_ring = t["ring_bytes"].to_dict()
    assert got_ring == want_ring, f"ring bytes per op: got {got_ring}, want {want_ring}"


def _list_forms() -> float:
    world, rank = dist.get_world_size(), dist.get_rank()
    shard = torch.full((6,), float(rank))
    dist.all_gather([torch.empty(6) for _ in range(world)], shard)
    dist.reduce_scatter(torch.empty(6), [torch.ones(6) for _ in range(world)])
    dist.all_gather_single(torch.empty(6 * world), shard)
    dist.reduce_scatter_single(torch.empty(6), torch.ones(6 * world))
    return 0.0


def test_list_forms_move_the_bytes_of_their_single_tensor_forms():
    res = course_dist.launch(_list_forms, 2, trace=True, timeout=120)
    t = lab03.traffic(res.trace, 2, 0).set_index("op")["ring_bytes"].to_dict()
    pairs = [("all_gather", "all_gather_single"), ("reduce_scatter", "reduce_scatter_single")]
    for listed, single in pairs:
        assert t.get(listed) == t.get(single) == 24.0, f"ring bytes {listed} vs {single}: {t}, want 24.0 each"


# ---- homework: the .part/fsync/rename checkpoint through the atomic item's checks -------------------------
ATOMIC_FACTS = """
import json, random, sys
from pathlib import Path
from course_dist.labkit import homework as kit

hw = kit.package()
work = Path(sys.argv[1])  # the test's own tmp_path: nothing left in /tmp
facts = {"publication step 2": kit.publication_problems(hw, work / "protocol")}
two = kit.two_phase_check(hw, work / "two_phase")
facts["two-phase facts"] = {k: v for k, v in two.items() if k != "published"}
for keep, n in [(1, 3), (2, 4), (3, 6)]:  # the hidden part draws keep in 1..3, n in 3..6
    root = work / f"keep_{keep}_{n}"
    for step in range(1, n + 1):
        hw.save_checkpoint(root, step, {"step": step}, {"step": step}, 0, 1, keep_last=keep)
    facts[f"keep_last={keep} after {n}"] = sorted(p.name for p in root.glob("step-*"))
    (root / f"step-{n:08d}" / "manifest.json").unlink()
    latest = hw.latest_checkpoint(root)
    facts[f"keep_last={keep}: latest without the newest manifest"] = None if latest is None else latest.name
    facts[f"publication step {n}, keep_last={keep}"] = kit.publication_problems(
        hw, work / f"protocol_{keep}_{n}", step=n, keep_last=keep)
print("JSON" + json.dumps(facts))
"""


def _atomic_facts(package_dir: Path, work: Path) -> dict:
    env = {**os.environ, "HW_PACKAGE": "fttrainer", "HW_PACKAGE_DIR": str(package_dir)}
    work.mkdir()
    proc = subprocess.run([sys.executable, "-c", ATOMIC_FACTS, str(work)], capture_output=True, text=True,
                          env=env, timeout=600, cwd=package_dir)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("JSON")), None)
    assert line is not None, f"the atomic checks did not run (exit {proc.returncode}):\n{proc.stderr[-3000:]}"
    return json.loads(line[4:])


@pytest.mark.parametrize("variant", sorted(p.stem for p in (VALID / "homework").glob("*.py")))
def test_homework_valid_variant_keeps_full_marks(variant, tmp_path):
    header, text = read_valid(VALID / "homework" / f"{variant}.py")
    package, module = header["replaces"].split("/", 1)
    reference = REPO / "solutions" / "homework"
    shutil.copytree(reference / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    assert (tmp_path / package / module).is_file(), f"{variant} replaces {header['replaces']}: no such module"
    (tmp_path / package / module).write_text(text)
    want = _atomic_facts(reference, tmp_path / "facts_reference")
    got = _atomic_facts(tmp_path, tmp_path / "facts")
    assert want["publication step 2"] == [], f"the reference breaks the publication rules: {want}"
    diff = {k: {"reference": want[k], "variant": got.get(k)} for k in want if got.get(k) != want[k]}
    assert not diff, f"{variant} ({header['why']}) differs from the reference: {diff}"


# ---- the publication rule follows renames, and still catches what is not durable ---------------------------
def _part_writer(root: Path, *, fsync: str) -> None:
    """A staging folder published by rename, each file written as <name>.part; ``fsync``: "before" the file's
    rename (through its fd), "after" it (the same, still open fd), or "never"."""
    tmp = root / ".tmp-step-00000002"
    tmp.mkdir()
    for name in ("model.pt", "manifest.json"):
        part = tmp / f"{name}.part"
        f = open(part, "wb")
        f.write(b"x" * 64)
        f.flush()
        if fsync == "before":
            os.fsync(f.fileno())
        os.replace(part, tmp / name)
        if fsync == "after":
            os.fsync(f.fileno())
        f.close()
    fd = os.open(tmp, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
    os.replace(tmp, root / "step-00000002")
    fd = os.open(root, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
    with open(root / ".latest.tmp", "w") as f:
        f.write("step-00000002")
        f.flush()
        os.fsync(f.fileno())
    os.replace(root / ".latest.tmp", root / "latest")
    fd = os.open(root, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)


@pytest.mark.parametrize(("fsync", "want_unsynced"), [("before", []), ("after", []),
                                                       ("never", ["manifest.json", "model.pt"])])
def test_publication_rule_follows_renames(tmp_path, fsync, want_unsynced):
    res = lab04.run_in_child(lambda: _part_writer(tmp_path, fsync=fsync), tmp_path)
    assert res.exitcode == 0, res.error
    problems = lab04.protocol_problems(res.records, 2)
    unsynced = sorted(name for name in ("manifest.json", "model.pt")
                      if any(f"/{name} is not fsynced" in p for p in problems))
    assert unsynced == want_unsynced, f"fsync {fsync}: files flagged as not fsynced {unsynced}, want " \
        f"{want_unsynced}; all problems: {problems}"
    others = [p for p in problems if "is not fsynced" not in p]
    assert others == [], f"fsync {fsync}: want no other problem, got {others}"
