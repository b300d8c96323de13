"""Helpers shared by tests/test_pipeline_*.py: the labs found in solutions/ (new labs are picked up
automatically)."""

from __future__ import annotations

import os

from autograder.config import CourseConfig

CFG = CourseConfig()
LABS = CFG.lab_ids()
# Mutants that replace a module (the homework's) need a fresh kernel and the notebook up to the next item:
# minutes apiece on 2 cores, so `make test` leaves them to `make course` unless COURSE_FILE_MUTANTS=1.
FILE_MUTANTS = os.environ.get("COURSE_FILE_MUTANTS", "") == "1"
# The homework's sandboxed autograde (~60 s a submission on 2 cores, plus a ~60 s reference run; its drills
# are real torchrun jobs) would push the suite past its 20 min: `make course` grades it; `make test` only with
# COURSE_PIPELINE_HOMEWORK=1.
GRADED_LABS = [lab for lab in LABS if lab != "homework" or os.environ.get("COURSE_PIPELINE_HOMEWORK") == "1"]


# The two pipeline groups (tests/test_pipeline_grading_{0,1}.py, one per pytest-xdist worker), balanced by
# the labs' exercise-level walks and samples as measured on the 2-core box (seconds, two full walks at once:
# lab03 ~740, lab04 ~740, lab05 ~385, lab01 ~215, lab02 ~180; under make test, whose walks stop at each
# mutant's own exercise, the two modules took 552 s and 531 s beside the rest of the suite). A lab not named
# here joins the smaller group.
PIPELINE_GROUPS = (("lab03", "lab05"), ("lab04", "lab01", "lab02"))


def pipeline_group(i: int) -> list[str]:
    """The graded labs of pipeline group ``i`` (every graded lab is in exactly one group)."""
    groups = [[lab for lab in g if lab in GRADED_LABS] for g in PIPELINE_GROUPS]
    for lab in GRADED_LABS:
        if not any(lab in g for g in groups):
            min(groups, key=len).append(lab)
    return groups[i]


def mutant_params(labs: list[str] | None = None) -> list[tuple[str, str]]:
    """(lab, name) of every mutant and valid variant the pipeline's exercise-level walk checks (of ``labs``,
    default every graded lab): a mutant must lose exactly its exercise, a valid variant must keep every point
    it reaches."""
    from autograder.mutants import find_checked

    out = []
    for lab in GRADED_LABS if labs is None else labs:
        try:
            out += [(lab, m.name) for m in find_checked(CFG, lab) if FILE_MUTANTS or not m.is_file_mutant]
        except ValueError:
            out.append((lab, "<unparsable mutant>"))
    return out
