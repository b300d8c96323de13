"""Every lab's core path fits the course's time budget (autograder.coursesize: <= 5 core exercises, the
headings' minutes within 65-90, about 100 lines of student code), and the counter counts what it says."""

from __future__ import annotations

import pytest

from autograder.coursesize import LABS, _solution_lines, budget_problems, lab_size


@pytest.mark.parametrize("lab", LABS)
def test_core_path_fits_the_budget(lab: str) -> None:
    size = lab_size(lab)
    assert size.core_exercises >= 1 and size.core_lines > 0 and size.core_words > 0, size
    assert not budget_problems(size), budget_problems(size)


def test_solution_lines_skip_blanks_comments_and_markers() -> None:
    text = ("def f():\n    ### BEGIN SOLUTION\n    # why\n\n    x = 1\n    return x\n"
            "    ### END SOLUTION\n    y = 2\n")
    assert _solution_lines(text) == 2, _solution_lines(text)


def test_unknown_lab_is_refused() -> None:
    with pytest.raises(ValueError, match="lab99"):
        lab_size("lab99")
