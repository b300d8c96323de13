"""How big each lab's core path is: exercises, student lines, words to read, the minutes the headings promise.

A lab's core path is what a student must do to reach 100: every exercise the rubric does not mark
``stretch``. Its size is counted from the hand-edited source (``solutions/<lab>/<lab>.py``):

- **student lines**: non-blank, non-comment lines inside the ``BEGIN/END SOLUTION`` regions of the core
  exercises' answer cells (what the reference needed; a student's answer is of that order);
- **words**: the words of the markdown cells a student reads on the core path (the introduction, every core
  exercise's section, the closing sections), not those of a stretch section;
- **stated minutes**: the ``~N min`` each core exercise's heading promises.

The course's budget (the brief): 65-90 minutes of core work for a prepared student, at most 5 core exercises,
about 100 lines of student code. ``python -m autograder.coursesize`` prints the table;
``tests/test_time_budget.py`` holds every lab to it. The minutes a student really needs are not measured
here (no class has timed them yet): the stated minutes are the authors' estimate, and the table shows the
counts it must be consistent with.
"""

from __future__ import annotations

import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from .rubrics import load_rubric
from .source import BEGIN_SOLUTION, END_SOLUTION, grade_id, read_source

REPO = Path(__file__).resolve().parents[1]
LABS = ("lab01", "lab02", "lab03", "lab04", "lab05")
MAX_CORE_EXERCISES = 5
CORE_MINUTES = (65, 90)
# "about 100 lines of student code": the labs measure 80-127 (lab04's publication exercise alone is 62)
MAX_CORE_LINES = 130
_HEADING = re.compile(r"^##\s+(Exercise|Stretch)\s+([0-9A-Z]+)\b.*?~\s*(\d+)\s*min", re.M)
_ANY_H2 = re.compile(r"^##\s+\S", re.M)
_WORD = re.compile(r"[A-Za-z0-9][\w'’.-]*")


@dataclass(frozen=True)
class LabSize:
    lab: str
    core_exercises: int
    stretch_exercises: int
    core_lines: int
    stretch_lines: int
    core_words: int
    stretch_words: int
    stated_core_minutes: int
    stated_stretch_minutes: int


def _solution_lines(text: str) -> int:
    n, inside = 0, False
    for line in text.splitlines():
        s = line.strip()
        if BEGIN_SOLUTION in s:
            inside = True
        elif END_SOLUTION in s:
            inside = False
        elif inside and s and not s.startswith("#"):
            n += 1
    return n


def lab_size(lab: str, root: Path = REPO) -> LabSize:
    """Count ``lab``'s core and stretch path from its source and rubric (ValueError on an unknown lab)."""
    src = root / "solutions" / lab / f"{lab}.py"
    if not src.is_file():
        raise ValueError(f"no lab source {src} for lab {lab!r}")
    rubric = load_rubric(root / "autograder" / "rubric" / f"{lab}.yaml")
    stretch_cells = {c for ex in rubric.exercises if ex.stretch for c in ex.solution_cells}
    nb = read_source(src)
    lines = {"core": 0, "stretch": 0}
    words = {"core": 0, "stretch": 0}
    minutes = {"core": 0, "stretch": 0}
    section = "core"  # the introduction is read by everyone
    for cell in nb.cells:
        text = cell.source
        if cell.cell_type == "markdown":
            for m in _ANY_H2.finditer(text):
                # a new level-2 section: a stretch heading opens a stretch section, any other closes it
                line = text[m.start():].splitlines()[0]
                h = _HEADING.match(line)
                section = "stretch" if h and h.group(1) == "Stretch" else "core"
                if h:
                    minutes[section] += int(h.group(3))
            words[section] += len(_WORD.findall(text))
        elif cell.cell_type == "code" and BEGIN_SOLUTION in text:
            part = "stretch" if grade_id(cell) in stretch_cells else "core"
            lines[part] += _solution_lines(text)
    return LabSize(
        lab=lab,
        core_exercises=sum(not ex.stretch for ex in rubric.exercises),
        stretch_exercises=sum(ex.stretch for ex in rubric.exercises),
        core_lines=lines["core"], stretch_lines=lines["stretch"],
        core_words=words["core"], stretch_words=words["stretch"],
        stated_core_minutes=minutes["core"], stated_stretch_minutes=minutes["stretch"],
    )


def budget_problems(size: LabSize) -> list[str]:
    """What breaks the course's time budget, each with the value found."""
    out = []
    if size.core_exercises > MAX_CORE_EXERCISES:
        out.append(f"{size.lab}: {size.core_exercises} core exercises, at most {MAX_CORE_EXERCISES}")
    lo, hi = CORE_MINUTES
    if not lo <= size.stated_core_minutes <= hi:
        out.append(f"{size.lab}: the core headings promise {size.stated_core_minutes} min, not {lo}-{hi}")
    if size.core_lines > MAX_CORE_LINES:
        out.append(f"{size.lab}: {size.core_lines} lines of student code on the core path, "
                   f"at most {MAX_CORE_LINES}")
    return out


def table(labs: tuple[str, ...] = LABS, root: Path = REPO):  # noqa: ANN201 - pandas is imported lazily
    import pandas as pd

    return pd.DataFrame([asdict(lab_size(lab, root)) for lab in labs]).set_index("lab")


if __name__ == "__main__":
    df = table()
    print(df.to_string())
    problems = [p for lab in df.index for p in budget_problems(lab_size(lab))]
    print("\n".join(problems) or "every lab fits the core budget")
    sys.exit(1 if problems else 0)
