"""lab03's judge rule (autograder/judges/lab03.py): check_averaged's outcome compared by its verdict, not its
wording.

    .venv/bin/python -m pytest tests/test_lab03_judges.py -q
"""

from __future__ import annotations

import pytest

from autograder.judges import lab03

SUMMED = "gradients are 2.0000x the single-process gradient - summed over 2 ranks, not averaged?"
FAILED = "gradients are 1.5000x the single-process gradient"


def test_same_verdict_in_other_words_passes():
    lab03.averaged_verdict(None, None, factor=1.0005, ratio=1.0005)
    lab03.averaged_verdict("ratio 2 looks summed", SUMMED, factor=2.0, ratio=2.0)
    lab03.averaged_verdict("off by 1.5x", FAILED, factor=1.5, ratio=1.5)
    # any precision from 3 decimals on names the ratio, whatever digits the planted factor had (issue 33)
    lab03.averaged_verdict("ratio 1.23457 is off", "gradients are 1.2346x", factor=1.234567, ratio=1.2345671)
    lab03.averaged_verdict("ratio 1.0019999999999998 is off", FAILED, factor=1.002, ratio=1.002)
    lab03.averaged_verdict("ratio 0.960 is off", FAILED, factor=1.0, ratio=0.95986)  # a sign flipped


@pytest.mark.parametrize(
    ("student", "reference", "factor", "ratio", "why"),
    [
        (None, FAILED, 1.5, 1.5, "passes"),  # a loose tolerance
        ("summed? 1.5", FAILED, 1.5, 1.5, "summed"),  # says summed far from the world size
        ("off by 2", SUMMED, 2.0, 2.0, "fails"),  # never says summed
        ("the gradients are off", FAILED, 1.5, 1.5, "name the ratio 1.5"),
        ("ratio 1.00 is off", FAILED, 1.002, 1.002, "name the ratio 1.002"),  # too few decimals
        ("ratio 1.1394 is off", FAILED, 1.0, 0.95986, "name the ratio 0.959"),  # a ratio of sums
        (3, FAILED, 1.5, 1.5, "expected None"),
    ],
)
def test_wrong_verdicts_fail_naming_both(student, reference, factor, ratio, why):  # noqa: ANN001
    with pytest.raises(AssertionError, match=why):
        lab03.averaged_verdict(student, reference, factor=factor, ratio=ratio)
