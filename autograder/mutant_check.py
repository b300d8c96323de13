"""Exercise-level mutant check, the fast one the test suite runs (`make course` grades mutants with nbgrader).

For each mutant: its cell swapped into the reference (instructor) notebook, executed in fast mode with
nbclient, continuing on errors; every auto cell up to the next exercise's tests is scored by nbgrader's own
rule. The mutant passes when its own exercise's auto cells fail and every other executed auto cell passes::

    python -m autograder mutants [--lab lab02]
"""

from __future__ import annotations

import copy
import logging
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

import nbformat

from autograder.config import CourseConfig
from autograder.mutants import Mutant, copy_extras, find_mutants, replace_cell, source_notebook
from autograder.source import grade_id, nbgrader_meta

log = logging.getLogger("autograder.mutants")


# ---- exercise-level execution -----------------------------------------------------------------------------
@contextmanager
def _env(**values: str):
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def execute_graded(
    cfg: CourseConfig,
    lab: str,
    nb: nbformat.NotebookNode,
    *,
    stop_after: int | None = None,
    timeout: float | None = None,
    mutant: Mutant | None = None,
) -> dict[str, bool]:
    """Run ``nb`` (cells ``[0, stop_after]``) in fast mode with nbclient; grade_id -> passed, per executed
    auto cell.

    A kernel that dies marks every not-yet-executed auto cell as failed instead of raising.
    """
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    nb = copy.deepcopy(nb)
    if stop_after is not None:
        nb.cells = nb.cells[: stop_after + 1]
    with tempfile.TemporaryDirectory(prefix=f"{lab}-exec-") as tmp:
        copy_extras(cfg, lab, Path(tmp), mutant)
        client = NotebookClient(
            nb,
            timeout=int(timeout or cfg.cell_timeout),
            allow_errors=True,
            interrupt_on_timeout=True,
            kernel_name="python3",
            resources={"metadata": {"path": tmp}},
        )
        with _env(**cfg.kernel_environ()):
            try:
                client.execute()
            except DeadKernelError as exc:
                log.warning("%s: kernel died: %s", lab, exc)
    return {gid: score == full for gid, (score, full) in score_cells(cfg, nb).items()}


def score_cells(cfg: CourseConfig, nb: nbformat.NotebookNode) -> dict[str, tuple[float, float]]:
    """grade_id -> (score, max) of every executed auto cell, by nbgrader's own rule (``determine_grade``)."""
    from nbgrader.utils import determine_grade

    out = {}
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        if meta.get("grade") and not meta.get("solution") and cell.cell_type == "code":
            if cell.get("execution_count") is None and not cell.get("outputs"):
                out[meta["grade_id"]] = (0.0, float(meta.get("points", 0)))  # never ran (kernel died)
                continue
            cell = copy.deepcopy(cell)
            if not cfg.stderr_fails:
                cell.outputs = [
                    o
                    for o in cell.outputs
                    if not (o.get("output_type") == "stream" and o.get("name") == "stderr")
                ]
            score, full = determine_grade(cell)
            out[meta["grade_id"]] = (float(score or 0.0), float(full))
    return out


def stop_index(nb: nbformat.NotebookNode, rubric, exercise: str) -> int:  # noqa: ANN001 - Rubric
    """Index of the last graded cell of the exercise *after* ``exercise`` (in notebook order), or the last
    cell."""
    pos = {grade_id(c): i for i, c in enumerate(nb.cells) if grade_id(c)}
    order = sorted(
        (min(pos[g.grade_id] for g in ex.graded_cells if g.grade_id in pos), ex)
        for ex in rubric.exercises
        if any(g.grade_id in pos for g in ex.graded_cells)
    )
    ids = [ex.id for _, ex in order]
    if exercise not in ids or ids.index(exercise) + 1 >= len(ids):
        return len(nb.cells) - 1
    nxt = order[ids.index(exercise) + 1][1]
    return max(pos[g.grade_id] for g in nxt.graded_cells if g.grade_id in pos)


def check_mutant(cfg: CourseConfig, m: Mutant) -> list[str]:
    """Problems with one mutant (empty = it fails exactly its own exercise's auto cells among those
    executed)."""
    from autograder.rubrics import load_rubric

    rubric = load_rubric(cfg.rubric / f"{m.lab}.yaml")
    ex = rubric.exercise(m.exercise)
    if m.is_file_mutant:
        nb = source_notebook(cfg, m.lab)
        got = execute_graded(cfg, m.lab, nb, stop_after=stop_index(nb, rubric, m.exercise), mutant=m)
    else:
        nb = replace_cell(source_notebook(cfg, m.lab), m.replaces, m.source)
        got = execute_graded(cfg, m.lab, nb, stop_after=stop_index(nb, rubric, m.exercise))
    problems = []
    for gid in sorted(ex.auto_ids):
        if got.get(gid, False):
            problems.append(
                f"{m.name}: its own exercise's cell {gid} PASSED (the tests miss this wrong answer)"
            )
    for gid, ok in sorted(got.items()):
        if gid not in ex.auto_ids and not ok:
            problems.append(
                f"{m.name}: cell {gid} of another exercise FAILED (the mutant must cost only {ex.id})"
            )
    return problems


def check_lab_mutants(
    cfg: CourseConfig, lab: str, mutants: list[Mutant] | None = None, progress: bool = False
) -> dict[str, list[str]]:
    """Every mutant of ``lab`` in ONE kernel pass: mutant name -> problems (empty = loses exactly its
    exercise).

    Walking the reference notebook once, at each answer cell that has mutants we run, per mutant: the mutant's
    source, then the cells up to the next exercise's tests (recording nbgrader's score of each auto cell);
    then the
    reference cell again and onwards. Re-running cells in order re-establishes the state, so each mutant
    sees the
    reference prefix (a fresh kernel per mutant would cost a kernel start and the whole prefix each time).
    A kernel
    that dies is restarted and the prefix replayed.
    """
    from jupyter_core.utils import run_sync
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError
    from tqdm.auto import tqdm

    from autograder.rubrics import load_rubric

    rubric = load_rubric(cfg.rubric / f"{lab}.yaml")
    mutants = find_mutants(cfg, lab) if mutants is None else mutants
    nb = source_notebook(cfg, lab)
    pos = {grade_id(c): i for i, c in enumerate(nb.cells) if grade_id(c)}
    problems: dict[str, list[str]] = {}
    by_cell: dict[int, list[Mutant]] = {}
    for m in [m for m in mutants if m.is_file_mutant]:  # a changed module needs a fresh kernel each
        try:
            problems[m.name] = check_mutant(cfg, m)
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
    if not by_cell:
        return problems
    last = max(stop_index(nb, rubric, ms[0].exercise) for ms in by_cell.values())
    bar = tqdm(total=len(mutants), desc=f"{lab} mutants", disable=not progress)

    with tempfile.TemporaryDirectory(prefix=f"{lab}-mutants-") as tmp, _env(**cfg.kernel_environ()):
        copy_extras(cfg, lab, Path(tmp))
        client = NotebookClient(
            copy.deepcopy(nb),
            timeout=int(cfg.cell_timeout),
            allow_errors=True,
            interrupt_on_timeout=True,
            kernel_name="python3",
            resources={"metadata": {"path": tmp}},
        )

        def run(cell: nbformat.NotebookNode, index: int) -> bool:
            """Execute one cell; False if the kernel died (then it has been restarted and the prefix
            replayed)."""
            try:
                client.execute_cell(cell, index)
                return True
            except CellTimeoutError as exc:  # the interrupt did not stop it: recorded as a failed cell
                cell.outputs.append(
                    nbformat.v4.new_output(
                        "error", ename="CellTimeoutError", evalue=str(exc)[:200], traceback=[]
                    )
                )
                return True
            except DeadKernelError:
                log.warning(
                    "%s: kernel died in cell %d; restarting and replaying cells [0, %d)", lab, index, index
                )
                run_sync(client.km.restart_kernel)(now=True)
                run_sync(client.kc.wait_for_ready)(timeout=120)
                for j in range(index):
                    client.execute_cell(copy.deepcopy(nb.cells[j]), j)
                return False

        with client.setup_kernel():
            for i in range(last + 1):
                for m in by_cell.get(i, []):
                    stop = stop_index(nb, rubric, m.exercise)
                    window = nbformat.v4.new_notebook()
                    window.cells = [copy.deepcopy(c) for c in nb.cells[i : stop + 1]]
                    window.cells[0].source = m.source
                    for k, cell in enumerate(window.cells):
                        if not run(cell, i + k):
                            break
                    got = {gid: sc == full for gid, (sc, full) in score_cells(cfg, window).items()}
                    ex = rubric.exercise(m.exercise)
                    probs = [
                        f"its own exercise's cell {gid} PASSED (the tests miss this wrong answer)"
                        for gid in sorted(ex.auto_ids)
                        if got.get(gid, False)
                    ]
                    probs += [
                        f"cell {gid} of another exercise FAILED (the mutant must cost only {ex.id})"
                        for gid, ok in sorted(got.items())
                        if gid not in ex.auto_ids and not ok
                    ]
                    problems[m.name] = probs
                    bar.update()
                run(copy.deepcopy(nb.cells[i]), i)  # the reference cell: state back on the reference path
    bar.close()
    return problems


def check_all(cfg: CourseConfig, labs: list[str] | None = None) -> int:
    bad = 0
    for lab in labs or cfg.lab_ids():
        if not (cfg.rubric / f"{lab}.yaml").exists():
            log.error("%s: no rubric, cannot check mutants", lab)
            bad += 1
            continue
        for name, problems in sorted(check_lab_mutants(cfg, lab, progress=True).items()):
            for p in problems:
                log.error("%s/%s: %s", lab, name, p)
            log.info("%s/%s: %s", lab, name, "ok" if not problems else "FAILED")
            bad += bool(problems)
    return 1 if bad else 0
