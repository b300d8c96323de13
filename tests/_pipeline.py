"""Helpers shared by tests/test_pipeline_*.py: the labs found in solutions/ (new labs are picked up
automatically)."""

from __future__ import annotations

from autograder.config import CourseConfig

CFG = CourseConfig()
LABS = CFG.lab_ids()


def mutant_params() -> list[tuple[str, str]]:
    from autograder.mutants import find_mutants

    out = []
    for lab in LABS:
        try:
            out += [(lab, m.name) for m in find_mutants(CFG, lab)]
        except ValueError:
            out.append((lab, "<unparsable mutant>"))
    return out
