"""Staged hints: ``hint("lab02.sampler")`` shows stage 1 (a nudge); ``hint(id, 2)`` the approach,
``hint(id, 3)`` the near-solution. Asking is always deliberate: nothing advances by itself (running a notebook
top to bottom, or a cell twice, never reveals more than the stage asked for).

Hints are data (``hints.yaml`` beside the lab: a nudge, an approach, a near-solution per graded exercise).
They are looked up next to the running notebook first (``make lab`` copies ``labs/<lab>/`` with its
``hints.yaml`` into ``work/<lab>/``), then in the release, ``labs/<lab>/hints.yaml`` (the release copies it
there from the lab's source folder). Never in ``solutions/``: the student distribution has no such folder,
and the hints a student sees must be the released ones.

In a notebook the hint renders as Markdown; elsewhere it is written as plain text to stdout::

    python -c "from course_dist import hint; hint('lab02.sampler')"
"""

from __future__ import annotations

import sys
from pathlib import Path

STAGES = ("nudge", "approach", "near-solution")
_REPO = Path(__file__).resolve().parents[1]


def _candidates(lab: str) -> list[Path]:
    cwd = Path.cwd()
    return [
        cwd / "hints.yaml",
        cwd / lab / "hints.yaml",
        _REPO / "labs" / lab / "hints.yaml",
    ]


def load_hints(path: Path) -> dict[str, list[str]]:
    """Parse one hints.yaml: ``{hint_id: [stage1, stage2, stage3]}`` (validated: three non-empty strings)."""
    import yaml

    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise ValueError(
            f"{path}: expected a mapping of hint id -> list of 3 stages, got {type(data).__name__}"
        )
    out = {}
    for hid, stages in data.items():
        if not isinstance(stages, list) or len(stages) != len(STAGES):
            raise ValueError(f"{path}: {hid} must have exactly {len(STAGES)} stages, got {stages!r}")
        if any(not isinstance(s, str) or not s.strip() for s in stages):
            raise ValueError(f"{path}: {hid} has an empty or non-text stage: {stages!r}")
        out[str(hid)] = [s.strip() for s in stages]
    return out


def _find(hint_id: str) -> tuple[list[str], Path]:
    if not isinstance(hint_id, str) or "." not in hint_id:
        raise ValueError(f"hint id must look like '<lab>.<exercise>' (e.g. 'lab02.sampler'), got {hint_id!r}")
    lab = hint_id.split(".", 1)[0]
    known: set[str] = set()
    searched = []
    for path in _candidates(lab):
        if path.is_file():
            searched.append(str(path))
            hints = load_hints(path)
            if hint_id in hints:
                return hints[hint_id], path
            known |= set(hints)
    where = ", ".join(searched) or (
        f"no hints.yaml found (looked beside the notebook and in {_REPO / 'labs' / lab})"
    )
    raise KeyError(f"unknown hint id {hint_id!r}; known ids: {sorted(known) or 'none'} (from {where})")


def get_hint(hint_id: str, stage: int = 1) -> tuple[int, str]:
    """(stage, text) for ``hint_id`` at ``stage`` (1 = nudge, 2 = approach, 3 = near-solution)."""
    stages, _ = _find(hint_id)
    if not isinstance(stage, int) or isinstance(stage, bool) or not 1 <= stage <= len(stages):
        raise ValueError(f"stage must be an integer 1..{len(stages)}, got {stage!r}")
    return stage, stages[stage - 1]


def reset_hints() -> None:
    """Kept for compatibility: hints hold no state any more."""


def _in_notebook() -> bool:
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    shell = ipython.get_ipython()
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


def hint(hint_id: str, stage: int = 1) -> None:
    """Show stage ``stage`` (1-3) of the hint for ``hint_id``: Markdown in a notebook, plain text elsewhere.

    Raises KeyError (listing the known ids) for an unknown id, ValueError for a stage outside 1..3.
    """
    n, text = get_hint(hint_id, stage)
    title = f"Hint {n}/{len(STAGES)} ({STAGES[n - 1]}) for {hint_id}"
    more = f" - next: hint({hint_id!r}, {n + 1})" if n < len(STAGES) else " (the last stage)"
    if _in_notebook():
        from IPython.display import Markdown, display

        display(Markdown(f"**{title}**{more}\n\n{text}"))
    else:
        sys.stdout.write(f"{title}{more}\n{text}\n")
