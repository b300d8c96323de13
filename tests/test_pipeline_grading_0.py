"""Pipeline group 0: its labs' reference and release graded through nbgrader, their mutants and valid variants
checked at the exercise level (tests/_pipeline_grading.py holds the tests; tests/_pipeline.py the groups)."""

from _pipeline_grading import (  # noqa: F401 - pytest collects what this module holds
    pytest_generate_tests,
    pytestmark,
    test_mutant_loses_its_exercise,
    test_reference_full_blank_zero,
    test_reference_passes_every_visible_part,
    test_samples_path_layout,
    validity,
)

GROUP = 0
