"""The drills that grade lab 04 exercise 2 (they call student code; they contain none of it).

- :func:`protocol_problems` reads the recorded file operations of one complete save and lists every broken
  rule of the publication protocol (every file in the temporary directory fsynced before the publishing
  rename - also files written behind the recorder's back -, manifest last, nothing written inside a
  published directory, ``latest`` moved last with ``os.replace``, directories fsynced).
- :func:`kill_drill` SIGKILLs the writer before each of those operations and checks what a restart would see,
  then cuts the power at the same point (:mod:`.powerloss`) and checks again.

The damage and retention drills are in :mod:`.damage`.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from .ckptfmt import MANIFEST, Loaded, demo_parts, same, step_dir_name, verify_dir
from .powerloss import power_loss
from .recorder import namespaces_of, run_in_child

SaveFn = Callable[..., Any]  # save(root, step, parts, *, keep) -> Path
LoadFn = Callable[..., Loaded]  # load(root) -> Loaded


def _follow_renames(records: list[dict], until: int) -> list[dict]:
    """``records`` with each operation's path replaced by the name its file carries once every rename before
    op ``until`` has happened: a file written as ``a.pt.part``, fsynced and renamed to ``a.pt`` is one file,
    and the fsync of ``a.pt.part`` made ``a.pt``'s data durable (renames of a folder move what is inside)."""
    moves = [(r["n"], r["src"], r["path"]) for r in records
             if r["op"] == "rename" and r.get("src") is not None and r["n"] < until]
    out = []
    for r in records:
        path = r["path"]
        if r["op"] != "rename":
            for n, src, dst in moves:
                if n > r["n"] and (path == src or path.startswith(src + "/")):
                    path = dst + path[len(src):]
        out.append(r if path == r["path"] else {**r, "path": path})
    return out


def protocol_problems(records: list[dict], step: int) -> list[str]:
    """Rules a durable, atomic save must follow, checked on the operation log of one complete save.

    Files are followed through renames before the publishing one (:func:`_follow_renames`)."""
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
    if tmp is None:
        return problems + [f"{final} is published by a rename from outside the checkpoint root"]
    records = _follow_renames(records, p)
    inside = [r for r in records if r["path"].startswith(tmp + "/") and r["op"] in ("open", "write", "close")]
    files = sorted({r["path"] for r in inside})
    for f in files:
        last = max(r["n"] for r in inside if r["path"] == f and r["op"] != "close")
        if not any(r["op"] == "fsync" and r["path"] == f and last < r["n"] < p for r in records):
            problems.append(
                f"{f} is not fsynced after its last write and before the rename that publishes it"
            )
    # every file the rename publishes, as the file system listed it then: torch.save(obj, "path") writes
    # through C++ (no Python open/write to see, and no fsync ever)
    for f in sorted(f"{tmp}/{c}" for c in (pub[0].get("contents") or [])):
        if f not in files and not any(r["op"] == "fsync" and r["path"] == f and r["n"] < p for r in records):
            problems.append(
                f"{f} was in {tmp} when it was renamed, but no write or fsync of it was seen (under this "
                f"name or any it was renamed from): if torch.save(obj, path) wrote it, that goes through "
                f"torch's C++ writer and never fsyncs; open the file yourself, torch.save(obj, f), "
                f"f.flush(), os.fsync(f.fileno())"
            )
    files = sorted(set(files) | {f"{tmp}/{c}" for c in (pub[0].get("contents") or [])})
    man = [f for f in files if f.endswith("/" + MANIFEST)]
    if not man:
        problems.append(f"no {MANIFEST} written in {tmp}")
    elif not any(r["path"] == man[0] for r in inside):
        problems.append(f"{man[0]} was not written through a Python file object (the order is unknown)")
    else:
        m_open = min(r["n"] for r in inside if r["path"] == man[0])
        late = [f for f in files if f != man[0] and max((r["n"] for r in inside if r["path"] == f),
                                                          default=0) > m_open]
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


def kill_drill(save: SaveFn, load: LoadFn, *, keep: int = 1, max_points: int = 120,
               power: bool = True) -> pd.DataFrame:
    """SIGKILL ``save(root, 2, parts, keep=keep)`` before each of its file operations (step 1 already saved);
    with ``power``, also cut the power at that point (:func:`power_loss`) and load again.

    One row per kill point: the operation it preceded, what ``load`` returned (after the kill, after the power
    loss), and the problems found (empty = good). The last row is the uninterrupted save: after a power loss
    it must still load step 2. ``.attrs["protocol"]`` lists broken protocol rules, ``.attrs["ops"]`` the log.
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
            power_problems, power_step = [], None
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
            if power:  # the same point, but the power goes: only what was made durable is left
                lost = power_loss(root, base, res.records, k)
                try:
                    after = load(root)
                    power_step = after.step
                    if k is None and after.step != 2:
                        why = "; ".join(f"{a}: {b}" for a, b in after.skipped.items())
                        power_problems.append(
                            f"power lost after save returned: load gave step {after.step}, step 2 was lost "
                            f"({'; '.join(lost[:3])}; loader: {why[:200]})")
                    elif not same(after.parts, demo_parts(after.step)):
                        power_problems.append(f"after a power loss load returned step {after.step} with "
                                              f"different contents")
                except Exception as e:  # noqa: BLE001 - any loader failure is a finding
                    power_problems.append(f"after a power loss load raised {type(e).__name__}: {e} "
                                          f"(lost: {'; '.join(lost[:3])})")
                power_problems += [f"after a power loss {x}"
                                   for x in _invariants(root, only=step_dir_name(2))]
            rec = records[k - 1] if k is not None else {"op": "(complete)", "path": ""}
            rows.append(
                {
                    "kill_before_op": k,
                    "op": rec["op"],
                    "path": rec["path"],
                    "loaded_step": getattr(got, "step", None),
                    "after_power_loss": power_step,
                    "problems": "; ".join(problems),
                    "power_loss_problems": "; ".join(power_problems),
                }
            )
            shutil.rmtree(root)
    df = pd.DataFrame(rows).astype({"kill_before_op": "Int64", "loaded_step": "Int64",
                                    "after_power_loss": "Int64"})
    df.attrs["protocol"] = protocol_problems(records, 2)
    df.attrs["ops"] = pd.DataFrame(records)
    return df
