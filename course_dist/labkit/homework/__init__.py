"""Machinery that grades the homework trainer package (it runs student code; it contains none of it).

``adapter`` (which package is graded; package mutants), ``procs`` (trainer processes: torchrun, timeouts,
signals, crash-in-save, slowed rank), ``results`` (what a run left on disk; fingerprints), ``drills``
(process-group checks of DDP, two-phase saves and the resume choice; numbers recomputed from metrics logs),
``publication`` (lab 04's fsync and rename rules on the package's save), ``plans`` (fault plans, every
class of case at every seed), ``proxy`` (in a split grading run's trusted kernel: the package's stand-in,
resolved in the student process).
"""

from .adapter import first_unfinished, package, package_name, package_root
from .drills import (
    ddp_check,
    recovery_parts,
    resume_choice_check,
    scaling_from_logs,
    sigterm_drill,
    two_phase_check,
)
from .plans import KILL_CLASSES, kill_plan
from .procs import (
    SMALL,
    Run,
    cli,
    command,
    crash_in_save,
    launch_trainer,
    run_trainer,
    start_trainer,
    stop_tree,
    wait_for_step,
)
from .publication import publication_problems
from .results import (
    bitwise_equal,
    checkpoint_steps,
    final,
    final_params,
    fingerprint,
    load_jsonl,
    samples_seen,
)

__all__ = [
    "KILL_CLASSES",
    "SMALL",
    "Run",
    "bitwise_equal",
    "checkpoint_steps",
    "cli",
    "command",
    "crash_in_save",
    "ddp_check",
    "final",
    "final_params",
    "first_unfinished",
    "fingerprint",
    "kill_plan",
    "launch_trainer",
    "load_jsonl",
    "package",
    "package_name",
    "package_root",
    "publication_problems",
    "recovery_parts",
    "resume_choice_check",
    "run_trainer",
    "samples_seen",
    "scaling_from_logs",
    "sigterm_drill",
    "start_trainer",
    "stop_tree",
    "two_phase_check",
    "wait_for_step",
]
