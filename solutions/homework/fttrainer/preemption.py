"""Signals and faults around the loop: SIGTERM -> "checkpoint after this step, then exit", SLURM requeue, and
the fault-drill hook.

Preemption and time limits arrive as SIGTERM: SLURM sends it (``--signal=TERM@120``: 120 s before the limit)
to the job step, ``torchrun``'s agent forwards it to every worker and SIGKILLs those still alive after its
shutdown timeout (``--shutdown-timeout``, default ``TORCH_ELASTIC_SHUTDOWN_TIMEOUT`` = 30 s; SLURM's own
``KillWait`` after a time-limit SIGTERM is 30 s by default). The SIGTERM checkpoint must fit in the smaller of
the two: the trainer logs every save's seconds (``checkpoint`` events) and the homework measures the SIGTERM
save against this grace (bench/results/homework.md).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from typing import Any

log = logging.getLogger(__name__)

#: torchrun's default SIGTERM -> SIGKILL grace for workers (seconds; ``--shutdown-timeout``)
TORCHRUN_SHUTDOWN_TIMEOUT_S = 30.0


def fault_hook() -> Any:
    """``course_dist.step`` (applies ``COURSE_FAULTS`` drills: kill, raise, hang, slow), else a minimal
    stand-in."""
    try:
        from course_dist import step

        return step
    except ImportError:
        return _env_faults


def _env_faults(i: int) -> None:
    """Stand-in for ``course_dist.step`` when course_dist is absent: ``kill:R@S`` and ``slow:R@S:SEC``,
    attempt 0."""
    plan = os.environ.get("COURSE_FAULTS", "")
    if not plan or os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") != "0":
        return
    rank = int(os.environ.get("RANK", "0"))
    for item in plan.split(","):
        kind, _, rest = item.partition(":")
        who, _, when = rest.partition("@")
        at, _, secs = when.partition(":")
        if int(who) != rank:
            continue
        if kind == "kill" and i == int(at):
            os.kill(os.getpid(), signal.SIGKILL)
        elif kind == "slow" and i >= int(at):
            time.sleep(float(secs))


class Preemption:
    """SIGTERM sets a flag; the loop turns it into 'checkpoint after this step, then exit' on every rank."""

    def __init__(self) -> None:
        self.requested = False
        self._old: Any = None

    def __enter__(self) -> Preemption:
        try:
            self._old = signal.signal(signal.SIGTERM, self._handle)
        except ValueError:  # not the main thread (e.g. a notebook helper thread): no preemption handling
            self._old = None
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        self.requested = True

    def __exit__(self, *exc: Any) -> None:
        if self._old is not None:
            signal.signal(signal.SIGTERM, self._old)


def requeue_slurm_job() -> bool:
    """Under SLURM, ``scontrol requeue $SLURM_JOB_ID`` (True when it ran and succeeded).

    Which of SLURM's own mechanisms brings the job back depends on why it stops (a job is requeueable with
    ``#SBATCH --requeue``, or by default when the cluster's ``JobRequeue=1``):
    - node failure: SLURM requeues a requeueable job itself;
    - preemption with the partition's or QOS's ``PreemptMode=REQUEUE``: SLURM requeues a requeueable job
      itself (SIGTERM first, then SIGKILL after ``GraceTime``); this call then finds the job already being
      requeued and at worst fails, which is logged and harmless;
    - preemption with ``PreemptMode=CANCEL``, or a time limit (``--signal=TERM@120``): SLURM ends the job
      (a SIGTERM checkpoint and exit 0 end it COMPLETED), and only this call puts it back.
    ``scontrol show config | grep -i preempt`` and ``scontrol show partition`` show the mode in force.
    Requeueing from rank 0, after the checkpoint is published, puts the same job (same ``SLURM_JOB_ID``, same
    run dir) back in the queue; it resumes there.
    """
    job = os.environ.get("SLURM_JOB_ID")
    if not job:
        return False
    try:
        r = subprocess.run(["scontrol", "requeue", job], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        log.error("could not requeue SLURM job %s: %s", job, e)
        return False
    if r.returncode != 0:
        log.error("scontrol requeue %s failed (%d): %s", job, r.returncode, r.stderr.strip())
        return False
    log.info("SLURM job %s requeued after the SIGTERM checkpoint", job)
    return True
