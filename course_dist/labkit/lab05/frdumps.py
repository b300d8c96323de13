"""Flight-recorder dumps of the planted hangs (Stretch B): one real run per case, read into plain records.

Each case runs at world 3 with ``TORCH_FR_BUFFER_SIZE`` set (``hang_tools``' rank function: gloo, collective
timeout ``pg_timeout`` seconds); every rank dumps its ring of collectives once its stuck collective times
out (on gloo a dump cannot come earlier: see ``hang_tools``). All cases run at once: every case's ranks are
started before any is joined, so six hangs cost about one timeout of wall time, not six. A case whose dumps do
not name its planted culprit (a rank that had not reached the hang on a loaded machine) runs again with
twice the timeout. The dump folders stay while the caller (the notebook) reads them and go when its
interpreter exits (``course_dist._scratch``); a first-attempt folder that a second attempt replaces goes at
once.
"""

from __future__ import annotations

import pickle
import time
from pathlib import Path
from typing import Any

from course_dist import _scratch
from course_dist._mp import get_context
from course_dist.labkit.lab05 import hang_tools, hangs


def _record(e: dict[str, Any]) -> dict[str, Any]:
    """One flight-recorder entry as plain data: the fields a reader needs, frames innermost first."""
    return {"group": str(e["process_group"][0]), "seq": int(e["collective_seq_id"]),
            "op": str(e["profiling_name"]).split(":")[-1], "sizes": [list(s) for s in e["input_sizes"]],
            "frames": [{"file": str(f["filename"]), "line": int(f["line"]), "name": str(f["name"])}
                       for f in e.get("frames", [])]}


def read_dumps(dump_dir: str) -> dict[int, list[dict[str, Any]]]:
    """Every rank's collective entries (point-to-point ones left out), in the order the rank issued them."""
    out: dict[int, list[dict[str, Any]]] = {}
    for r in range(hangs.WORLD):
        f = Path(dump_dir, f"fr_{r}")
        entries = pickle.loads(f.read_bytes())["entries"] if f.exists() else []
        out[r] = [_record(e) for e in entries if not e.get("is_p2p")]
    return out


def truth(case: str, culprit: int, dump_dir: str) -> dict[str, Any]:
    """What a correct reading of the dumps names: the planted culprit, its op (the DDP hang: DDP's own bucket
    all-reduce, which the recorder sees and the lab's Python trace does not), its planted line, and the
    (group, seq id) of the first disagreement (``hang_tools.fr_read``: the bench's reading of these dumps)."""
    t = hangs.truth(case, culprit)
    read = hang_tools.fr_read(dump_dir)
    seq = None if read["seq"] is None else read["seq"] + 1  # fr_read counts from 0, the dump's ids from 1
    return {"rank": t["rank"], "group": read["group"], "seq": seq,
            "op": "all_reduce" if t["op"] is None else t["op"], "line": t["line"]}


def _settled(case: str, culprit: int, dump_dir: str) -> bool:
    read = hang_tools.fr_read(dump_dir)
    t = hangs.truth(case, culprit)
    return read["rank"] == culprit and read["line"] == t["line"]


def _start(case: str, culprit: int, pg_timeout: float) -> tuple[str, list[Any]]:
    out = _scratch.tmp_dir("fr_dump_")  # read later by the caller: removed at its exit
    port = hang_tools._free_port()
    # the launcher's torch-preloaded forkserver, not a fork of the notebook's kernel: a fork inherits the
    # kernel's threads and locks (course_dist._mp), and a rank stuck on one never reaches the hang
    _, ctx = get_context("forkserver")
    procs = [ctx.Process(target=hang_tools._rank,
                         args=(r, port, case, culprit, "flight_recorder", pg_timeout, out))
             for r in range(hangs.WORLD)]
    for p in procs:
        p.start()
    return out, procs


def _finish(procs: list[Any], deadline: float) -> None:
    for p in procs:
        p.join(max(0.1, deadline - time.monotonic()))
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join()


def fr_dumps(cases: list[tuple[str, int]], pg_timeout: float = 2.0,
             wall: float = 60.0) -> list[dict[str, Any]]:
    """Run each ``(case, culprit)`` under the flight recorder, all at once; per case ``{"case", "culprit",
    "dir", "entries": {rank: [entry, ...]}}`` with entries ``{"group", "seq", "op", "sizes", "frames"}``."""
    for case, culprit in cases:
        hangs.truth(case, culprit)  # validates both
    dirs: dict[int, str] = {}
    todo = list(range(len(cases)))
    for attempt in range(2):  # a second try, with twice the timeout, for the cases that had not settled
        started = {i: _start(*cases[i], pg_timeout * 2**attempt) for i in todo}
        deadline = time.monotonic() + wall
        for _, procs in started.values():
            _finish(procs, deadline)
        for i, (out, _) in started.items():
            if i in dirs:
                _scratch.remove(dirs[i])
            dirs[i] = out
        todo = [i for i in todo if not _settled(*cases[i], dirs[i])]
        if not todo:
            break
    return [{"case": case, "culprit": culprit, "dir": dirs[i], "entries": read_dumps(dirs[i])}
            for i, (case, culprit) in enumerate(cases)]
