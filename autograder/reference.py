"""The oracle of the judge: the reference run's evidence for a lab, seed and mode (computed once, cached).

``reference_evidence(cfg, lab, seed, fast) -> Path`` (also importable from :mod:`autograder.judge`).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from autograder.judge import publish

log = logging.getLogger("autograder.judge")


# ---- the oracle: reference evidence ------------------------------------------------------------------------
def _source_hash(cfg: Any, lab: str, nb: Any) -> str:
    """Hash of what the reference evidence depends on: the source notebook, the files beside it and the
    course_dist package the notebook imports (its labkit measures what the evidence records: a fix there must
    not be judged against evidence cached before it)."""
    import nbformat

    import course_dist

    h = hashlib.sha256(b"run.json v2: visible_failed\0" + nbformat.writes(nb).encode())
    pkg = Path(course_dist.__file__).parent
    for base, p in [(cfg.solutions, p) for p in sorted((cfg.solutions / lab).rglob("*"))] + [
        (pkg.parent, p) for p in sorted(pkg.rglob("*.py"))
    ]:
        if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".ipynb"):
            h.update(str(p.relative_to(base)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:16]


def evidence_path(cfg: Any, lab: str, seed: int, fast: bool) -> Path:
    """Where the reference evidence of (lab, seed, mode) is cached (it may not exist yet)."""
    from autograder.release import build_source_notebook

    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an int, got {seed!r}")
    nb = build_source_notebook(cfg, lab)
    mode = "fast" if fast else "full"
    return cfg.build / "grading" / "reference" / lab / f"{seed}-{mode}-{_source_hash(cfg, lab, nb)}"


@contextlib.contextmanager
def publishing(cfg: Any, lab: str, seed: int, fast: bool) -> Iterator[Path | None]:
    """Hold the cache lock of (lab, seed, mode) while the course's own reference *submission* is graded, so
    its sandboxed nbgrader run is also the reference run (``make course``: one run of each reference, not
    two).

    Yields the cache path to publish into with :func:`publish` (None: already cached, nothing to do). Every
    other caller of :func:`reference_evidence` waits on the lock meanwhile; if nothing was published (the
    grading failed), the next one runs the reference itself. The lock dies with the process that holds it.
    """
    import fcntl

    out = evidence_path(cfg, lab, seed, fast)
    if (out / "run.json").exists():
        yield None
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / f".{out.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield None if (out / "run.json").exists() else out


def reference_evidence(cfg: Any, lab: str, seed: int, fast: bool) -> Path:
    """Directory of the reference run's evidence for ``lab`` at ``seed`` and mode (computed once, cached).

    Executes the source notebook (reference solutions + hidden tests) in a plain kernel - reference code is
    trusted - with ``COURSE_EVIDENCE_DIR``, ``COURSE_GRADE_SEED`` and ``COURSE_FAST`` set, in a scratch copy
    of the files beside the source. Cached under ``build/grading/reference/<lab>/<seed>-<mode>-<hash>/``;
    concurrent callers (workers of one run, shards) wait on a lock and reuse the first one's result.
    ``run.json`` there lists graded cells whose reference execution raised (a course bug, logged).
    """
    import fcntl

    from autograder.kernel import plain_client
    from autograder.mutants import copy_extras
    from autograder.release import build_source_notebook
    from autograder.source import nbgrader_meta
    from autograder.verdict import cell_failure, is_auto_test

    out = evidence_path(cfg, lab, seed, fast)
    nb = build_source_notebook(cfg, lab)
    mode = "fast" if fast else "full"
    if (out / "run.json").exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / f".{out.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one reference run per key, however many workers ask
        if (out / "run.json").exists():
            return out
        t0 = time.monotonic()
        with tempfile.TemporaryDirectory(prefix=f"{lab}-reference-") as tmp:
            work, ev = Path(tmp) / "work", Path(tmp) / "evidence"
            ev.mkdir()
            copy_extras(cfg, lab, work)
            ktmp = Path(tmp) / "tmp"  # the kernel's temp dir, removed with the run's (a kernel is killed)
            ktmp.mkdir()
            env = {"COURSE_EVIDENCE_DIR": str(ev), "COURSE_GRADE_SEED": str(seed), "TMPDIR": str(ktmp)}
            client = plain_client(cfg, nb, work, env=env, fast=fast)
            visible_failed = _execute_split(client, nb)
            errors = {}
            for cell in nb.cells:
                why = cell_failure(cell) if is_auto_test(cell) else ""
                if why:
                    errors[nbgrader_meta(cell)["grade_id"]] = why
            if errors:
                log.error("%s: the reference run raised in graded cells %s", lab, errors)
            run = {
                "lab": lab,
                "seed": seed,
                "mode": mode,
                "errors": errors,
                "visible_failed": visible_failed,
                "seconds": round(time.monotonic() - t0, 1),
            }
            publish(out, ev, run)
    return out


def _execute_split(client: Any, nb: Any) -> list[str]:
    """Execute ``nb`` cell by cell; an auto test cell as two executions, its visible part then its hidden part
    (the same kernel state as one execution: the hidden part follows the visible one either way). Returns the
    grade ids whose visible part raised: the reference must pass every visible test on its own, which the
    exercise-level mutant check reports without walking the notebook again."""
    import copy

    from autograder.source import grade_id
    from autograder.verdict import is_auto_test, split_test

    visible_failed: list[str] = []
    with client.setup_kernel():
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            visible, hidden = split_test(cell.source) if is_auto_test(cell) else (cell.source, "")
            if not hidden.strip():
                client.execute_cell(cell, i)
                continue
            outputs = []
            for part in (visible, hidden):
                piece = copy.deepcopy(cell)
                piece.source = part
                client.execute_cell(piece, i)
                failed = any(o.get("output_type") == "error" for o in piece.get("outputs", []))
                if part is visible and failed:
                    visible_failed.append(grade_id(cell))
                outputs += piece.get("outputs", [])
            cell.outputs = outputs
            nb.cells[i] = cell  # nbclient stores each executed piece in its notebook: the whole cell back
    return visible_failed
