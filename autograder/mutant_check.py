"""Exercise-level mutant check under the grading contract (the fast one the test suite and `make course` run).

For each mutant: its cell swapped into the reference (instructor) notebook, executed in fast mode with
nbclient at a fixed grading seed, continuing on errors. Each graded test cell runs as TWO executions - its
visible part, then its hidden part (only if the visible part raised nothing: nbgrader's one execution would
stop there too) - so we learn whether the visible tests alone catch the mutant. A test
cell's verdict is the grader's: no error in either part AND the trusted judge passes its evidence against the
reference's (:mod:`autograder.judge`). A mutant is right when

* every auto cell of its own exercise fails, and every other executed auto cell passes (a cell mutant runs
  through the next exercise's tests, their visible parts - the hidden parts too with ``next_hidden=True`` -, a
  file mutant - a changed module, live from the first cell - through its own; with ``next_exercise=False``,
  what `make test` runs, a cell mutant too stops after its own exercise; a valid variant always runs through
  the next exercise, hidden parts and judge included);
* the visible part of some auto cell of its own exercise fails, unless its header says
  ``# hidden-only: <why>``.

And the reference must pass every visible part (a problem reported under the key ``"<reference>"``, present
only when there is one)::

    python -m autograder mutants [--lab lab02]

``check_lab_mutants(cfg, lab, mutants=None, progress=False, seed=0) -> {mutant name: [problems]}``.
"""

from __future__ import annotations

import copy
import json
import logging
import shutil
import tempfile
import time
from pathlib import Path

import nbformat

from autograder.config import CourseConfig
from autograder.mutants import Mutant, copy_extras, find_checked, replace_cell, source_notebook
from autograder.source import grade_id
from autograder.verdict import cell_failure, cell_verdict, is_auto_test, split_test

log = logging.getLogger("autograder.mutants")
REFERENCE = "<reference>"


def stop_index(nb: nbformat.NotebookNode, rubric, exercise: str, after: int = 1) -> int:  # noqa: ANN001
    """Index of the last graded cell of the exercise ``after`` places past ``exercise`` in notebook order
    (1: the next one; 0: ``exercise`` itself), or the last cell."""
    pos = {grade_id(c): i for i, c in enumerate(nb.cells) if grade_id(c)}
    order = sorted(
        (min(pos[g.grade_id] for g in ex.graded_cells if g.grade_id in pos), ex)
        for ex in rubric.exercises
        if any(g.grade_id in pos for g in ex.graded_cells)
    )
    ids = [ex.id for _, ex in order]
    if exercise not in ids or ids.index(exercise) + after >= len(ids):
        return len(nb.cells) - 1
    nxt = order[ids.index(exercise) + after][1]
    return max(pos[g.grade_id] for g in nxt.graded_cells if g.grade_id in pos)


class _Runner:
    """One kernel (plain: reference and mutants are trusted code) recording evidence into ``evidence``."""

    def __init__(
        self, cfg: CourseConfig, nb: nbformat.NotebookNode, workdir: Path, evidence: Path, seed: int
    ):
        from autograder.kernel import plain_client

        self.cfg, self.nb, self.evidence = cfg, nb, evidence
        self.died = False  # set when the kernel died (nbgrader would then zero the rest of the notebook)
        self._stopped = False
        # the kernel's temp dir inside the run's own (removed with it): a kernel is killed, never exits, so
        # the folders its cells and forkservers leave in the temp dir (flight-recorder dumps, pymp-*) stay
        tmp = workdir.parent / "tmp"
        tmp.mkdir(exist_ok=True)
        env = {"COURSE_EVIDENCE_DIR": str(evidence), "COURSE_GRADE_SEED": str(seed), "TMPDIR": str(tmp)}
        self.client = plain_client(cfg, copy.deepcopy(nb), workdir, env=env, fast=cfg.fast)

    def _exec(self, cell: nbformat.NotebookNode, index: int) -> str:
        """Execute one cell; why it failed, '' if it did not (a kernel that died is restarted and the prefix
        replayed)."""
        from jupyter_core.utils import run_sync
        from nbclient.exceptions import CellTimeoutError, DeadKernelError

        t0 = time.monotonic()
        self._stopped = False  # the cell did not run to its end: timed out, or its kernel died
        try:
            self.client.execute_cell(cell, index)
            return cell_failure(cell, self.cfg.stderr_fails)
        except CellTimeoutError:
            self._stopped = True
            took = time.monotonic() - t0
            return f"timed out after {took:.0f} s (cell timeout {self.cfg.cell_timeout:.0f} s)"
        except DeadKernelError:
            log.warning("kernel died in cell %d; restarting and replaying cells [0, %d)", index, index)
            self.died = self._stopped = True
            run_sync(self.client.km.restart_kernel)(now=True)
            run_sync(self.client.kc.wait_for_ready)(timeout=120)
            for j in range(index):
                self.run(copy.deepcopy(self.nb.cells[j]), j)
            return "the kernel died"

    def run(self, cell: nbformat.NotebookNode, index: int, hidden: bool = True) -> dict | None:
        """Run a cell; for an auto test cell {gid, visible_failed, failed, why} (visible and hidden run apart;
        ``why``: the first failing part's reason). ``hidden=False``: the visible part only (the result then
        says ``visible_only``: its verdict is that part's, no evidence to judge)."""
        if not is_auto_test(cell):
            self._exec(cell, index)
            return None
        gid = grade_id(cell)
        (self.evidence / f"{gid}.pt").unlink(missing_ok=True)  # this run's evidence only
        visible, hidden_src = split_test(cell.source)
        vis = copy.deepcopy(cell)
        vis.source = visible
        vwhy = self._exec(vis, index)
        hwhy = ""
        # Under nbgrader the cell is one execution: an error in its visible part stops it before the hidden
        # part. So the hidden part runs here only where it would there (a visible part that merely wrote to
        # stderr still fails, and its hidden part still runs): the verdict is the same, the state the next
        # cells see is nbgrader's, and a mutant caught by its visible tests costs no hidden run.
        stopped = bool(vwhy) and (
            any(o.get("output_type") == "error" for o in vis.get("outputs", [])) or self._stopped
        )
        if hidden_src.strip() and not stopped and hidden:
            hid = copy.deepcopy(cell)
            hid.source = hidden_src
            hwhy = self._exec(hid, index)
        why = f"visible part: {vwhy}" if vwhy else f"hidden part: {hwhy}" if hwhy else ""
        r = {"gid": gid, "visible_failed": bool(vwhy), "failed": bool(vwhy or hwhy), "why": why}
        return r if hidden else {**r, "visible_only": True}


DIED = "not run: the kernel died in an earlier cell (under nbgrader the rest of the notebook scores 0)"


def _judge(results: list[dict], ref_dir: Path, stu_dir: Path) -> dict[str, dict]:
    """gid -> {passed, visible_failed, why}: each cell's :func:`autograder.verdict.cell_verdict`."""
    from autograder.judge import load_evidence

    ref, stu = load_evidence(ref_dir), load_evidence(stu_dir)
    out = {}
    for r in results:
        if r.get("visible_only"):  # its hidden part did not run: no evidence of its own to judge
            v = {"passed": not r["failed"], "visible_failed": r["visible_failed"], "why": r["why"]}
            out[r["gid"]] = v
            continue
        v = cell_verdict(r["gid"], r.get("why", ""), ref.get(r["gid"]), stu.get(r["gid"]))
        out[r["gid"]] = {"passed": v.passed, "visible_failed": r["visible_failed"], "why": v.why}
    return out


def _problems(m: Mutant, ex, got: dict[str, dict]) -> list[str]:  # noqa: ANN001 - Exercise
    if m.valid:  # a correct answer written differently: every cell it reaches keeps its points
        return [
            f"valid variant lost the points of cell {gid}: {v.get('why', '')}"
            for gid, v in sorted(got.items())
            if not v["passed"]
        ]
    probs = [
        f"its own exercise's cell {gid} PASSED (the tests miss this wrong answer)"
        for gid in sorted(ex.auto_ids)
        if got.get(gid, {}).get("passed", False)
    ]
    probs += [
        f"cell {gid} of another exercise FAILED (the mutant must cost only {ex.id}): {v.get('why', '')}"
        for gid, v in sorted(got.items())
        if gid not in ex.auto_ids and not v["passed"]
    ]
    own = [got[g] for g in sorted(ex.auto_ids) if g in got]
    if not m.hidden_only and own and not any(v["visible_failed"] for v in own):
        probs.append(
            f"the visible tests of {ex.id} all PASS on it: add a visible case of that class "
            "(or, rarely, mark the mutant '# hidden-only: <why>')"
        )
    return probs


def check_mutant(cfg: CourseConfig, m: Mutant, seed: int = 0, collateral: bool = True) -> list[str]:
    """Problems with one mutant in a fresh kernel (file mutants: the module changes before import).

    ``collateral=False`` (a file mutant only; what ``make course`` runs): the other exercises' graded cells
    before it are skipped - the notebook's test cells depend on its set-up cells only (the homework's do) - so
    the run proves that the mutant loses its own exercise, not that it costs nothing else; the default also
    runs them, and they must pass."""
    from autograder.reference import reference_evidence
    from autograder.rubrics import load_rubric

    rubric = load_rubric(cfg.rubric / f"{m.lab}.yaml")
    ex = rubric.exercise(m.exercise)
    nb = source_notebook(cfg, m.lab)
    if not m.is_file_mutant:
        nb = replace_cell(nb, m.replaces, m.source)
    # A changed module is live from the first cell, so every earlier exercise's tests run (and must pass)
    # as the prefix anyway; the run stops after its own exercise. The next exercise's tests, which a cell
    # mutant also runs, would cost a file mutant up to a torchrun drill more (the homework's recovery cell:
    # ~37 s of ~78); the sample class's full nbgrader run of one sampled mutant covers the rest.
    stop = stop_index(nb, rubric, m.exercise, after=0 if m.is_file_mutant else 1)
    with tempfile.TemporaryDirectory(prefix=f"{m.lab}-mutant-") as tmp:
        work, ev = Path(tmp) / "work", Path(tmp) / "evidence"
        ev.mkdir()
        copy_extras(cfg, m.lab, work, m if m.is_file_mutant else None)
        runner = _Runner(cfg, nb, work, ev, seed)
        results = []
        others = {c.grade_id for e in rubric.exercises if e.id != m.exercise for c in e.graded_cells}
        skip = m.is_file_mutant and not collateral
        with runner.client.setup_kernel():
            for i in range(stop + 1):
                cell = copy.deepcopy(nb.cells[i])
                if skip and grade_id(cell) in others:
                    continue
                if runner.died and is_auto_test(cell):
                    results.append(
                        {"gid": grade_id(cell), "visible_failed": True, "failed": True, "why": DIED}
                    )
                    continue
                r = runner.run(cell, i)
                if r:
                    results.append(r)
        # asked for after the run: under make course the reference submission may still be grading (it is
        # the reference run then, and holds the cache's lock)
        ref_dir = reference_evidence(cfg, m.lab, seed, True)
        return _problems(m, ex, _judge(results, ref_dir, ev))


def check_lab_mutants(
    cfg: CourseConfig,
    lab: str,
    mutants: list[Mutant] | None = None,
    progress: bool = False,
    seed: int = 0,
    collateral: bool = True,
    next_exercise: bool = True,
    next_hidden: bool = False,
) -> dict[str, list[str]]:
    """Every mutant of ``lab`` in ONE kernel pass: mutant name -> problems (empty = loses exactly its
    exercise, and its visible tests catch it).

    Past its own exercise a cell mutant runs through the next exercise's tests, their visible parts: that it
    costs nothing else. ``next_hidden=True`` runs their hidden parts too, judge included (measured: a fifth
    of lab03's walk CPU, under a tenth of each other lab's walk time). Hidden parts call the same answers on
    other seeds and edge cases, so a mutant that breaks only a hidden part of the NEXT exercise is what the
    default misses. ``next_exercise=False`` stops each cell mutant after its own exercise's tests: the check
    then proves that it loses its exercise and that the visible tests catch it, not that it costs nothing
    else (that run is 40-50 % of a walk's cell time). A valid variant always runs through the next exercise,
    hidden parts and judge included: it must keep every point it reaches.

    Walking the reference notebook once, at each answer cell that has mutants we run, per mutant: the mutant's
    source, then the cells up to the next exercise's tests (their evidence moved aside per mutant); then the
    reference cell again and onwards. Re-running cells in order re-establishes the state, so each mutant sees
    the reference prefix. The walk itself is the reference run: its evidence, recorded when the walk reaches
    each test cell, is what the mutants are judged against (same kernel, same seed), after the walk.
    """
    from tqdm.auto import tqdm

    from autograder.reference import reference_evidence
    from autograder.rubrics import load_rubric

    cfg = cfg.with_(fast=True)
    rubric = load_rubric(cfg.rubric / f"{lab}.yaml")
    mutants = find_checked(cfg, lab) if mutants is None else mutants
    nb = source_notebook(cfg, lab)
    pos = {grade_id(c): i for i, c in enumerate(nb.cells) if grade_id(c)}
    problems: dict[str, list[str]] = {}
    by_cell: dict[int, list[Mutant]] = {}
    for m in [m for m in mutants if m.is_file_mutant]:  # a changed module needs a fresh kernel each
        try:
            problems[m.name] = check_mutant(cfg, m, seed, collateral)
        except KeyError as exc:
            problems[m.name] = [str(exc)]
    for m in [m for m in mutants if not m.is_file_mutant]:
        try:
            ex = rubric.exercise(m.exercise)
        except KeyError as exc:
            problems[m.name] = [str(exc)]
            continue
        if m.replaces not in pos or m.replaces not in ex.solution_cells:
            problems[m.name] = [
                f"replaces {m.replaces!r}, which is not an answer cell of exercise {m.exercise!r} "
                f"(its answer cells: {list(ex.solution_cells)})"
            ]
            continue
        by_cell.setdefault(pos[m.replaces], []).append(m)

    def stop_of(m: Mutant) -> int:
        return stop_index(nb, rubric, m.exercise, after=1 if next_exercise or m.valid else 0)

    def full_until(m: Mutant) -> int:  # the last cell whose hidden part the mutant's run executes
        return stop_of(m) if m.valid or next_hidden else stop_index(nb, rubric, m.exercise, after=0)

    bar = tqdm(total=len(mutants), desc=f"{lab} mutants", disable=not progress)
    if not by_cell:  # file mutants only (the homework): no walk; the reference's visible check from its run
        run = json.loads((reference_evidence(cfg, lab, seed, True) / "run.json").read_text())
        ref_probs = [f"reference: the visible part of {g} FAILED" for g in run.get("visible_failed", [])]
        errors = sorted(run.get("errors", {}).items())
        ref_probs += [f"reference: cell {g} FAILED ({why})" for g, why in errors]
        if ref_probs:
            problems[REFERENCE] = ref_probs
        bar.update(len(mutants))
        bar.close()
        return problems
    # the reference's own pass goes as far as a full check's would (its visible parts are checked too)
    last = max(stop_index(nb, rubric, ms[0].exercise) for ms in by_cell.values())
    pending: list[tuple[Mutant, list[dict], Path]] = []
    with tempfile.TemporaryDirectory(prefix=f"{lab}-mutants-") as tmp:
        work, ev, ref = Path(tmp) / "work", Path(tmp) / "evidence", Path(tmp) / "reference"
        ev.mkdir()
        ref.mkdir()
        copy_extras(cfg, lab, work)
        runner = _Runner(cfg, nb, work, ev, seed)
        ref_results: list[dict] = []
        with runner.client.setup_kernel():
            for i in range(last + 1):
                for k, m in enumerate(by_cell.get(i, [])):
                    stop, full = stop_of(m), full_until(m)
                    results = []
                    runner.died = False
                    for j in range(i, stop + 1):
                        cell = copy.deepcopy(nb.cells[j])
                        if j == i:
                            cell.source = m.source
                        if runner.died:  # under nbgrader a dead kernel fails everything after it
                            if is_auto_test(cell):
                                results.append(
                                    {
                                        "gid": grade_id(cell),
                                        "visible_failed": True,
                                        "failed": True,
                                        "why": DIED,
                                    }
                                )
                            continue
                        r = runner.run(cell, j, hidden=j <= full)
                        if r:
                            results.append(r)
                    mdir = Path(tmp) / f"mutant-{i}-{k}"
                    mdir.mkdir()
                    for r in results:  # this mutant's evidence, judged once the walk has the reference's
                        f = ev / f"{r['gid']}.pt"
                        if f.exists():
                            shutil.move(str(f), mdir / f.name)
                    pending.append((m, results, mdir))
                r = runner.run(
                    copy.deepcopy(nb.cells[i]), i
                )  # the reference cell: back on the reference path
                if r:
                    ref_results.append(r)
                    f = ev / f"{r['gid']}.pt"
                    if f.exists():
                        shutil.copy2(f, ref / f.name)
        # Judged against a clean reference run (cached, shared with grading at the same seed): a mutant that
        # poisons the kernel (patches a module) must not spoil the verdicts of the mutants after it.
        clean = reference_evidence(cfg, lab, seed, True)
        for m, results, mdir in pending:
            problems[m.name] = _problems(m, rubric.exercise(m.exercise), _judge(results, clean, mdir))
            bar.update()
        ref_got = _judge(ref_results, clean, ref)
        why = {r["gid"]: f" ({r['why']})" if r.get("why") else "" for r in ref_results}
        ref_probs = [
            f"reference: the visible part of {g} FAILED{why.get(g, '')}"
            for g, v in ref_got.items()
            if v["visible_failed"]
        ]
        ref_probs += [
            f"reference: cell {g} FAILED ({v['why']})" for g, v in ref_got.items() if not v["passed"]
        ]
        if ref_probs:
            problems[REFERENCE] = ref_probs
    bar.close()
    return problems


def check_all(cfg: CourseConfig, labs: list[str] | None = None, next_hidden: bool = False) -> int:
    bad = 0
    for lab in labs or cfg.lab_ids():
        if not (cfg.rubric / f"{lab}.yaml").exists():
            log.error("%s: no rubric, cannot check mutants", lab)
            bad += 1
            continue
        got = check_lab_mutants(cfg, lab, progress=True, next_hidden=next_hidden)
        for name, problems in sorted(got.items()):
            for p in problems:
                log.error("%s/%s: %s", lab, name, p)
            log.info("%s/%s: %s", lab, name, "ok" if not problems else "FAILED")
            bad += bool(problems)
    return 1 if bad else 0
