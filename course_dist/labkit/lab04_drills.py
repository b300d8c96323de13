"""The drills that grade lab 04 exercises 2 and 3 (they call student code; they contain none of it).

- :func:`protocol_problems` reads the recorded file operations of one complete save and lists every
  broken rule of the publication protocol (fsync before publish, manifest last, nothing written inside a
  published directory,
  ``latest`` moved last with ``os.replace``, directories fsynced).
- :func:`kill_drill` SIGKILLs the writer before each of those operations and checks what a restart would see.
- :func:`corruption_drill` flips bits, truncates files and deletes manifests, then asks the loader.
- :func:`distributed_drill` runs a two-rank save and kills one rank in the middle of it.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

import course_dist

from .lab04_crash import (
    MANIFEST,
    Loaded,
    _rank_save,
    demo_parts,
    namespaces_of,
    run_in_child,
    same,
    step_dir_name,
    verify_dir,
)

SaveFn = Callable[..., Any]  # save(root, step, parts, *, keep) -> Path
LoadFn = Callable[..., Loaded]  # load(root) -> Loaded


def protocol_problems(records: list[dict], step: int) -> list[str]:
    """Rules a durable, atomic save must follow, checked on the operation log of one complete save."""
    final = step_dir_name(step)
    problems: list[str] = []
    pub = [r for r in records if r["op"] == "rename" and r["path"] == final]
    for r in records:
        if r["op"] == "open" and r["path"].startswith("step-"):
            problems.append(f"op {r['n']}: {r['path']} opened for writing inside a published step directory")
            break
    if not pub:
        return problems + [
            f"no rename publishes {final}: write into a temporary directory, then os.replace it"
        ]
    p, tmp = pub[0]["n"], pub[0]["src"]
    inside = [r for r in records if r["path"].startswith(tmp + "/") and r["op"] in ("open", "write", "close")]
    files = sorted({r["path"] for r in inside})
    for f in files:
        last = max(r["n"] for r in inside if r["path"] == f and r["op"] != "close")
        if not any(r["op"] == "fsync" and r["path"] == f and last < r["n"] < p for r in records):
            problems.append(
                f"{f} is not fsynced after its last write and before the rename that publishes it"
            )
    man = [f for f in files if f.endswith("/" + MANIFEST)]
    if not man:
        problems.append(f"no {MANIFEST} written in {tmp}")
    else:
        m_open = min(r["n"] for r in inside if r["path"] == man[0])
        late = [f for f in files if f != man[0] and max(r["n"] for r in inside if r["path"] == f) > m_open]
        if late:
            problems.append(f"{MANIFEST} was started before {late[0]} was complete: the manifest goes last")
    if not any(r["op"] == "fsync" and r["path"] == tmp and r["n"] < p for r in records):
        problems.append(f"the directory {tmp} is not fsynced before it is renamed (its entries may be lost)")
    if not any(r["op"] == "fsync" and r["path"] == "." and r["n"] > p for r in records):
        problems.append("the checkpoint root is not fsynced after the rename (the new name may be lost)")
    latest = [r for r in records if r["op"] == "rename" and r["path"] == "latest"]
    if not latest:
        problems.append("'latest' is not moved into place with os.replace (write a temp file, then replace)")
    elif latest[-1]["n"] < p:
        problems.append("'latest' is moved before the checkpoint it names is published")
    return problems


def _published(root: Path) -> list[Path]:
    return sorted(d for d in root.iterdir() if d.is_dir() and d.name.startswith("step-"))


def _invariants(root: Path, world_size: int | None = None, only: str | None = None) -> list[str]:
    """What a crash must never leave behind: an incomplete step-* dir (``only``: just that one; a half-pruned
    old directory is tolerated, the loader skips it), a 'latest' naming a broken one."""
    dirs = [d for d in _published(root) if only is None or d.name == only]
    problems = [f"{d.name}: {why}" for d in dirs if (why := verify_dir(d, world_size))]
    latest = root / "latest"
    if latest.exists():
        name = latest.read_text().strip()
        if not (root / name).is_dir() or verify_dir(root / name, world_size):
            problems.append(f"latest names {name!r}, which is not a complete checkpoint")
    return problems


def kill_drill(save: SaveFn, load: LoadFn, *, keep: int = 1, max_points: int = 120) -> pd.DataFrame:
    """SIGKILL ``save(root, 2, parts, keep=keep)`` before each of its file operations (step 1 already saved).

    One row per kill point: the operation it preceded, what ``load`` returned, and the problems found (empty =
    good). The last row is the uninterrupted save. ``.attrs["protocol"]`` lists broken protocol rules.
    """
    with tempfile.TemporaryDirectory(prefix="lab04-kill-") as tmp:
        base = Path(tmp) / "base"
        base.mkdir()
        save(base, 1, demo_parts(1), keep=keep)
        trace_root = Path(tmp) / "trace"
        shutil.copytree(base, trace_root)
        full = run_in_child(
            lambda: save(trace_root, 2, demo_parts(2), keep=keep), trace_root, namespaces=namespaces_of(save)
        )
        if full.exitcode != 0:
            raise RuntimeError(f"the uninterrupted save failed in the child:\n{full.error}")
        records = full.records
        pub = next((r["n"] for r in records if r["op"] == "rename" and r["path"] == step_dir_name(2)), None)
        n = len(records)
        points = (
            list(range(1, n + 1))
            if n <= max_points
            else sorted({1 + i * (n - 1) // (max_points - 1) for i in range(max_points)})
        )
        rows = []
        for k in points + [None]:
            root = Path(tmp) / f"k{k}"
            shutil.copytree(base, root)
            res = run_in_child(
                lambda root=root: save(root, 2, demo_parts(2), keep=keep),
                root,
                kill_at=k,
                namespaces=namespaces_of(save),
            )
            want = 2 if k is None or (pub is not None and k > pub) else 1
            problems = _invariants(root, only=step_dir_name(2))
            if k is not None and res.signal is None:
                problems.append(f"writer was not killed at op {k} (exit {res.exitcode}): {res.error[-300:]}")
            try:
                got = load(root)
                if got.step != want:
                    problems.append(f"load returned step {got.step}, expected {want}")
                elif not same(got.parts, demo_parts(want)):
                    problems.append(f"load returned step {want} with different contents")
            except Exception as e:  # noqa: BLE001 - any loader failure is a finding
                got = None
                problems.append(f"load raised {type(e).__name__}: {e}")
            rec = records[k - 1] if k is not None else {"op": "(complete)", "path": ""}
            rows.append(
                {
                    "kill_before_op": k,
                    "op": rec["op"],
                    "path": rec["path"],
                    "loaded_step": getattr(got, "step", None),
                    "problems": "; ".join(problems),
                }
            )
            shutil.rmtree(root)
    df = pd.DataFrame(rows).astype({"kill_before_op": "Int64", "loaded_step": "Int64"})
    df.attrs["protocol"] = protocol_problems(records, 2)
    df.attrs["ops"] = pd.DataFrame(records)
    return df


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


def keep_drill(save: SaveFn, *, keep: int = 2, steps: int = 5) -> list[str]:
    """Save steps 1..steps with ``keep``; exactly the newest ``keep`` complete directories must remain."""
    with tempfile.TemporaryDirectory(prefix="lab04-keep-") as tmp:
        root = Path(tmp)
        for s in range(1, steps + 1):
            save(root, s, demo_parts(s), keep=keep)
        names = [d.name for d in _published(root)]
        want = [step_dir_name(s) for s in range(steps - keep + 1, steps + 1)]
        problems = [] if names == want else [f"kept {names}, expected {want}"]
        latest = (root / "latest").read_text().strip() if (root / "latest").exists() else None
        if latest != step_dir_name(steps):
            problems.append(f"latest is {latest!r}, expected {step_dir_name(steps)!r}")
        return problems + _invariants(root)


# ---- exercise 3: two ranks, one checkpoint -----------------------------------------------------------------
def distributed_drill(
    save: SaveFn,
    *,
    world_size: int = 2,
    kill_points: tuple[tuple[int, int], ...] = ((1, 2),),
    timeout: float = 60.0,
) -> pd.DataFrame:
    """Two clean distributed saves, then one per ``(rank, op)`` kill point; check the published state each
    time."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="lab04-dist-") as tmp:
        base = Path(tmp) / "base"
        base.mkdir()
        for s in (1, 2):
            course_dist.launch(_rank_save, world_size, args=(save, str(base), s, None, 2), timeout=timeout)
            problems = _invariants(base, world_size)
            d = base / step_dir_name(s)
            if not d.is_dir():
                problems.append(f"{d.name} was not published")
            else:
                for r in range(world_size):
                    mine = sorted(p for p in d.iterdir() if p.name.startswith(f"rank{r:02d}-"))
                    if not mine:
                        problems.append(f"{d.name} holds no file of rank {r}")
                if not (list(d.glob("shared-*")) or list(d.glob("rank00-model*"))):
                    problems.append(f"{d.name} holds no shared model file")
            rows.append(
                {"case": f"clean save of step {s}", "published": d.is_dir(), "problems": "; ".join(problems)}
            )
        for rank, op in kill_points:
            root = Path(tmp) / f"kill{rank}_{op}"
            shutil.copytree(base, root)
            err = ""
            try:
                course_dist.launch(
                    _rank_save, world_size, args=(save, str(root), 3, {rank: op}, 2), timeout=timeout
                )
            except Exception as e:  # noqa: BLE001 - a RankError is the expected outcome
                err = type(e).__name__
            problems = _invariants(root, world_size)
            pub = (root / step_dir_name(3)).is_dir()
            if pub:
                problems.append(f"{step_dir_name(3)} was published although rank {rank} died at its op {op}")
            if not err:
                problems.append(f"the launch did not fail although rank {rank} was killed at op {op}")
            rows.append(
                {
                    "case": f"rank {rank} killed at its file op {op}",
                    "published": pub,
                    "problems": "; ".join(problems),
                    "launch_error": err,
                }
            )
    return pd.DataFrame(rows)
