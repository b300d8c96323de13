"""Exercise 2's damage and retention drills (they call student code; they contain none of it).

- :func:`corruption_drill` flips bits, truncates files and deletes manifests, then asks the loader.
- :func:`keep_drill` checks retention: the newest ``keep`` complete checkpoints stay, never a newer or an
  incomplete one is deleted, leftover ``.trash-*`` debris does not break a save, ``keep < 1`` is refused.
"""

from __future__ import annotations

import random
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from .ckptfmt import MANIFEST, demo_parts, same, step_dir_name
from .drills import LoadFn, SaveFn, _invariants, _published


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def corruption_drill(save: SaveFn, load: LoadFn) -> pd.DataFrame:
    """Damage published checkpoints in the ways disks and people do; the loader must fall back and say why."""

    def part(root: Path, step: int) -> Path:
        files = sorted(p for p in (root / step_dir_name(step)).iterdir() if p.name != MANIFEST)
        return files[len(files) // 2]

    cases: dict[str, tuple[Callable[[Path], None], int | None]] = {
        "clean": (lambda r: None, 3),
        "bit flip in newest": (lambda r: _flip(part(r, 3)), 2),
        "truncated newest": (lambda r: _truncate(part(r, 3)), 2),
        "newest manifest deleted": (lambda r: (r / step_dir_name(3) / MANIFEST).unlink(), 2),
        "newest manifest garbage": (lambda r: (r / step_dir_name(3) / MANIFEST).write_text('{"ste'), 2),
        "newest file deleted": (lambda r: part(r, 3).unlink(), 2),
        "two newest damaged": (lambda r: (_flip(part(r, 3)), _truncate(part(r, 2))), 1),
        "leftover temp dir": (lambda r: (r / ".tmp-step-00000009").mkdir(), 3),
        "all damaged": (lambda r: [_flip(part(r, s)) for s in (1, 2, 3)], None),
    }
    rows = []
    with tempfile.TemporaryDirectory(prefix="lab04-corrupt-") as tmp:
        base = Path(tmp) / "base"
        base.mkdir()
        for s in (1, 2, 3):
            save(base, s, demo_parts(s), keep=3)
        for name, (damage, want) in cases.items():
            root = Path(tmp) / name.replace(" ", "_")
            shutil.copytree(base, root)
            damage(root)
            problem, got, why = "", None, ""
            try:
                res = load(root)
                got, why = res.step, "; ".join(f"{k}: {v}" for k, v in res.skipped.items())
                if want is None:
                    problem = f"returned step {got} although every checkpoint is damaged (expected an error)"
                elif got != want:
                    problem = f"returned step {got}, expected {want}"
                elif not same(res.parts, demo_parts(want)):
                    problem = "returned the right step with different contents"
                elif want < 3 and not any(
                    step_dir_name(3) in k and v.strip() for k, v in res.skipped.items()
                ):
                    problem = f"did not say why it skipped {step_dir_name(3)} (Loaded.skipped={res.skipped})"
            except FileNotFoundError as e:
                why = str(e)
                if want is not None:
                    problem = f"raised FileNotFoundError: {e}"
            except Exception as e:  # noqa: BLE001
                problem = f"raised {type(e).__name__}: {e}"
            rows.append(
                {"case": name, "expected": want, "loaded": got, "reasons": why[:120], "problem": problem}
            )
    return pd.DataFrame(rows)


def _names(root: Path) -> list[str]:
    return [d.name for d in _published(root)]


def keep_drill(save: SaveFn, *, keep: int = 2, steps: int = 5, stale: int = 9) -> pd.DataFrame:
    """Retention, one row per case (``problem`` empty = good):

    - ``keep``: saving steps 1..``steps`` leaves exactly the newest ``keep`` and ``latest`` names the last;
    - ``keep=0`` and ``keep=-1``: refused with ValueError naming the value (``keep < 1``, not ``keep == 0``);
    - leftover ``.trash-*`` directories (a crash in the middle of an earlier delete) do not break a save, a
      prune, or a re-save of a step that exists;
    - resumed past a broken newer directory (``step-<stale>`` without manifest) and an incomplete older one:
      a save with keep=1 deletes only the complete checkpoints older than the one just written.
    """
    rows = []

    def case(name: str, expected: list[str], run: Callable[[Path], Any], check: str | None = None) -> None:
        with tempfile.TemporaryDirectory(prefix="lab04-keep-") as tmp:
            root = Path(tmp)
            problem = ""
            try:
                run(root)
                kept = _names(root)
                if kept != expected:
                    problem = f"kept {kept}, expected {expected}"
                elif check and (bad := _invariants(root, only=check)):
                    problem = "; ".join(bad)
            except Exception as e:  # noqa: BLE001 - any failure of the save is a finding
                kept, problem = _names(root), f"raised {type(e).__name__}: {e}"
            rows.append({"case": name, "expected": ", ".join(expected), "kept": ", ".join(kept),
                         "problem": problem})

    def newest(root: Path) -> None:
        for s in range(1, steps + 1):
            save(root, s, demo_parts(s), keep=keep)
        latest = (root / "latest").read_text().strip() if (root / "latest").exists() else None
        if latest != step_dir_name(steps):
            raise AssertionError(f"latest is {latest!r}, expected {step_dir_name(steps)!r}")

    want = [step_dir_name(s) for s in range(max(1, steps - keep + 1), steps + 1)]
    case(f"keep={keep}, {steps} saves", want, newest, step_dir_name(steps))

    def refused(bad_keep: int) -> Callable[[Path], None]:
        def run(root: Path) -> None:
            try:
                save(root, 1, demo_parts(1), keep=bad_keep)
            except ValueError as e:
                if str(bad_keep) not in str(e):
                    raise AssertionError(
                        f"the ValueError for keep={bad_keep} does not name the value: {e}") from None
                return
            raise AssertionError(f"keep={bad_keep} did not raise ValueError (keep must be >= 1)")
        return run

    case("keep=0 refused", [], refused(0))
    case("keep=-1 refused", [], refused(-1))  # "keep < 1", not "keep == 0"

    def debris(root: Path) -> None:
        save(root, 1, demo_parts(1), keep=3)
        save(root, 2, demo_parts(2), keep=3)
        for s in (1, 2):  # what a crash in the middle of a delete leaves behind
            junk = root / f".trash-{step_dir_name(s)}"
            junk.mkdir()
            (junk / "model.pt").write_bytes(b"half-deleted")
        save(root, 2, demo_parts(2), keep=3)  # re-save an existing step (its old copy goes to the trash)
        save(root, 3, demo_parts(3), keep=2)  # prune step 1

    case("leftover .trash-* debris", [step_dir_name(2), step_dir_name(3)], debris, step_dir_name(3))

    def resumed(root: Path) -> None:
        for s in (1, 2):
            save(root, s, demo_parts(s), keep=3)
        (root / step_dir_name(0)).mkdir()  # an older save that never finished: no manifest
        broken = root / step_dir_name(stale)  # a newer one that did not verify, so training resumed at 2
        shutil.copytree(root / step_dir_name(2), broken)
        (broken / MANIFEST).unlink()
        save(root, 3, demo_parts(3), keep=1)

    case(f"resumed past a broken step-{stale}, keep=1", [step_dir_name(0), step_dir_name(3),
                                                         step_dir_name(stale)], resumed, step_dir_name(3))
    return pd.DataFrame(rows)


def drill_variants(rng: random.Random) -> dict[str, Any]:
    """Arguments for the hidden variants of :func:`keep_drill` (drawn from the grading seed)."""
    return {"keep": rng.choice([1, 2, 3]), "steps": rng.randint(3, 6), "stale": rng.randint(7, 40)}
