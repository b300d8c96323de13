"""The one way the grader starts a plain (trusted) kernel: the reference run, the mutant check and
``make course``'s reviewer notebooks execute course code, never a student's, so they run unsandboxed - but
with the same kernel manager, cell timeout and teardown as a graded run::

    client = plain_client(cfg, nb, workdir, env={"COURSE_GRADE_SEED": "0"}, fast=True)
    with client.setup_kernel():
        client.execute_cell(cell, index)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from course_dist.seed import FAST_VAR


def plain_client(
    cfg: Any,
    nb: Any,
    workdir: Path,
    *,
    env: dict[str, str] | None = None,
    fast: bool = True,
    timeout: int = 0,
) -> Any:
    """An nbclient ``NotebookClient`` on ``nb``, its kernel's cwd ``workdir``, its environment the course's
    kernel environment, ``FAST_VAR`` for ``fast``, then ``env``. ``timeout``: per-cell seconds (default: the
    course's cell timeout)."""
    from nbclient import NotebookClient

    from autograder.sandbox import SandboxedKernelManager

    timeout = timeout or int(cfg.cell_timeout)
    client = NotebookClient(
        nb,
        timeout=timeout,
        allow_errors=True,
        interrupt_on_timeout=True,
        # killed once the last cell replied: a graceful exit waits 2.5 s on course_dist's unreaped forkserver
        # (nbgrader_ext says more); evidence is written per call, so nothing is lost
        shutdown_kernel="immediate",
        kernel_name="python3",
        kernel_manager_class=SandboxedKernelManager,  # without a sandbox spec: a plain kernel, same teardown
        resources={"metadata": {"path": str(workdir)}},
    )
    client.create_kernel_manager().extra_env = {
        **cfg.kernel_environ(),
        FAST_VAR: "1" if fast else "0",
        # the limit this client enforces: course_dist.launch shortens its own timeout to what a cell has left
        "COURSE_CELL_TIMEOUT_S": str(timeout),
        **(env or {}),
    }
    return client
