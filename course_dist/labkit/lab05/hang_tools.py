"""torch's own hang tooling on the planted hangs of exercise 1: what each names, and how fast (gloo, CPU).

Three tools, each run on the same ``hangs.<case>(culprit)`` functions at world 3 (a fresh gloo group per run,
its collective timeout ``pg_timeout`` seconds, so a hang ends as gloo's own ``RuntimeError``):

- ``flight_recorder``: ``TORCH_FR_BUFFER_SIZE`` set; after the hang ends, each rank dumps its ring of
  collectives (``torch._C._distributed_c10d._dump_fr_trace``: seq id, op, sizes, Python frames). Read two
  ways:
  ``fr_read`` (first seq id where the ranks disagree, the odd one out, its frame in ``hangs.py``) and torch's
  analyzer ``python -m torch.distributed.flight_recorder.fr_trace`` (``fr_analyze``).
  Found on torch 2.13 + gloo: entries are recorded (state stays ``scheduled``; completion is only in
  ``pg_status``); a dump from a watchdog thread *waits until the stuck gloo collective times out*, so the
  recorder cannot name a hang before the collective timeout; the dump's ``pg_config`` names the default group
  ``''`` while its entries say ``'0'``, and the analyzer then stops with ``KeyError``: ``fr_analyze`` rewrites
  ``pg_config`` from the entries (the one patch) before running it.
- ``detail``: ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` wraps the group in torch's ``ProcessGroupWrapper``, which
  checks every collective's fingerprint (op, shapes) across ranks before running it, on a helper gloo group.
- ``monitored_barrier``: after the case ends (its gloo timeout), every rank calls
  ``dist.monitored_barrier(group, timeout=pg_timeout, wait_all_ranks=True)`` on a gloo group made before the
  case; rank 0 reports the ranks that did not arrive (none, when every rank is alive and timed out).

``run_tool(case, culprit, tool)`` returns what the tool said and when; ``named(...)`` parses the rank, op and
line it names. Ranks are forked from the caller (torch already imported: no import in the timed path).
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import pickle
import re
import socket
import subprocess
import sys
import time
import traceback
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from course_dist import _scratch
from course_dist.labkit.lab05 import hangs

TOOLS = ("flight_recorder", "detail", "monitored_barrier")
_ENV = {"flight_recorder": {"TORCH_FR_BUFFER_SIZE": "2000"}, "detail": {"TORCH_DISTRIBUTED_DEBUG": "DETAIL"},
        "monitored_barrier": {}}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank(rank: int, port: int, case: str, culprit: int, tool: str, pg_timeout: float, out: str) -> None:
    os.environ.update(_ENV[tool])  # read when the group is created: set before init
    dist.set_debug_level_from_env()  # the debug level was read when torch was imported (before the fork)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=hangs.WORLD,
                            timeout=timedelta(seconds=pg_timeout))
    # monitored_barrier on a group of its own: after a gloo timeout the hung group's pairs are closed
    # ("Application timeout caused pair closure") and a barrier on it names nobody
    mb_group = dist.new_group(backend="gloo") if tool == "monitored_barrier" else None
    dist.barrier()  # start together: the clock measures the hang, not the connection
    t0 = time.perf_counter()
    rec: dict[str, Any] = {"rank": rank, "error": None}
    try:
        getattr(hangs, case)(culprit)
    except Exception as exc:  # noqa: BLE001 - the error text *is* what the tool reports
        rec["error"] = f"{type(exc).__name__}: {exc}"
        lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == hangs.__file__]
        rec["line"] = lines[-1] if lines else None  # where this rank's own call raised
    rec["seconds"] = time.perf_counter() - t0
    if tool == "flight_recorder":
        Path(out, f"fr_{rank}").write_bytes(torch._C._distributed_c10d._dump_fr_trace())
        rec["dumped_s"] = time.perf_counter() - t0
    if tool == "monitored_barrier":
        try:
            dist.monitored_barrier(group=mb_group, timeout=timedelta(seconds=pg_timeout), wait_all_ranks=True)
            rec["barrier"] = None
        except Exception as exc:  # noqa: BLE001
            rec["barrier"] = f"{type(exc).__name__}: {exc}"
        rec["barrier_s"] = time.perf_counter() - t0
    Path(out, f"rank_{rank}.json").write_text(json.dumps(rec))
    os._exit(0)  # no destroy_process_group: a group left mid-hang can block its teardown


def run_tool(case: str, culprit: int, tool: str, pg_timeout: float = 2.0,
             wall: float = 30.0) -> dict[str, Any]:
    """Run one planted hang under ``tool``; ``{"ranks": [per-rank record], "dir": dump folder}``."""
    hangs.truth(case, culprit)  # validates both
    if tool not in TOOLS:
        raise ValueError(f"tool must be one of {TOOLS}, got {tool!r}")
    out = _scratch.tmp_dir(f"hang_{tool}_")  # read later by the caller: removed at its exit
    ctx = mp.get_context("fork")
    port = _free_port()
    procs = [ctx.Process(target=_rank, args=(r, port, case, culprit, tool, pg_timeout, out))
             for r in range(hangs.WORLD)]
    for p in procs:
        p.start()
    deadline = time.monotonic() + wall
    for p in procs:
        p.join(max(0.1, deadline - time.monotonic()))
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join()
    ranks = []
    for r in range(hangs.WORLD):
        f = Path(out, f"rank_{r}.json")
        ranks.append(json.loads(f.read_text()) if f.exists() else {"rank": r, "error": "no record (killed)"})
    return {"ranks": ranks, "dir": out}


def _user_line(frames: list[dict]) -> int | None:
    """The innermost frame in ``hangs.py``: the line of the planted scenario that issued the collective."""
    for fr in frames:
        if fr.get("filename", "").endswith("lab05/hangs.py"):
            return int(fr["line"])
    return None


def fr_read(dump_dir: str) -> dict[str, Any]:
    """The first collective number where the ranks' flight-recorder entries disagree (op, sizes, or missing),
    the odd one out (the rank whose entry differs from the majority's), its op and its line."""
    per_rank = {}
    for r in range(hangs.WORLD):
        f = Path(dump_dir, f"fr_{r}")
        entries = pickle.loads(f.read_bytes())["entries"] if f.exists() else []
        # keyed by (group, seq id): DDP's log group and the default group number their collectives apart
        per_rank[r] = {(e["process_group"][0], e["collective_seq_id"]): e
                       for e in entries if not e.get("is_p2p")}
    seqs = sorted(set().union(*per_rank.values()), key=lambda k: (k[0] != "0", k[1], k[0]))
    for seq in seqs:
        keys = {r: None if seq not in es else (es[seq]["profiling_name"], str(es[seq]["input_sizes"]))
                for r, es in per_rank.items()}
        if len(set(keys.values())) > 1:
            counts = {k: list(keys.values()).count(k) for k in set(keys.values())}
            odd = [r for r, k in keys.items() if counts[k] == 1]
            rank = odd[0] if len(odd) == 1 else None
            e = per_rank[rank].get(seq) if rank is not None else None
            op = e["profiling_name"].split(":")[-1] if e else None
            return {"rank": rank, "seq": seq[1] - 1, "group": seq[0], "op": op,
                    "line": _user_line(e["frames"]) if e else None}
    return {"rank": None, "seq": None, "group": None, "op": None, "line": None}


def fr_analyze(dump_dir: str) -> dict[str, Any]:
    """torch's analyzer on the dumps (``pg_config`` rewritten from the entries first, see the module doc):
    the culprit rank and error type it prints, and its seconds."""
    fixed = Path(_scratch.tmp_dir("fr_fixed_"))
    try:
        return _analyze(dump_dir, fixed)
    finally:
        _scratch.remove(fixed)


def _analyze(dump_dir: str, fixed: Path) -> dict[str, Any]:
    for r in range(hangs.WORLD):
        f = Path(dump_dir, f"fr_{r}")
        if not f.exists():
            continue
        d = pickle.loads(f.read_bytes())
        groups = {tuple(e["process_group"]) for e in d["entries"]}
        d["pg_config"] = {name: {"name": name, "desc": desc, "ranks": str(list(range(hangs.WORLD)))}
                          for name, desc in groups}
        (fixed / f"rank_{r}").write_bytes(pickle.dumps(d))
    t0 = time.perf_counter()
    cmd = [sys.executable, "-m", "torch.distributed.flight_recorder.fr_trace", str(fixed), "-p", "rank_"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    text = proc.stdout + proc.stderr
    culprit = re.search(r"Culprit rank (\d+)", text)
    kind = re.search(r"Error type: (\w+)", text)
    return {"rank": int(culprit.group(1)) if culprit else None, "error_type": kind.group(1) if kind else None,
            "seconds": time.perf_counter() - t0, "text": text[-2000:]}


_DETAIL = re.compile(r"but Rank (\d+) is running collective: CollectiveFingerPrint\(.*?OpType=(\w+)")
_MONITORED = re.compile(r"[Rr]anks? ([\d, ]+) failed to pass monitoredBarrier")


def named(result: dict[str, Any], tool: str) -> dict[str, Any]:
    """What ``tool`` named for one ``run_tool`` result: ``{"rank", "op", "line", "seconds", "message"}``
    (``None`` where it names nothing). Seconds: from the case's start to the first rank holding the answer."""
    ranks = result["ranks"]
    if tool == "flight_recorder":
        got = fr_read(result["dir"])
        secs = max(r.get("dumped_s", float("nan")) for r in ranks)  # every rank's dump is needed
        return {**got, "seconds": secs, "message": "fr entries"}
    if tool == "detail":  # each rank names the *other* side of its mismatch: the culprit is named most
        found = [(_DETAIL.search(r.get("error") or ""), r) for r in ranks]
        votes = [(int(m.group(1)), m.group(2).lower(), r) for m, r in found if m]
        if votes:
            ids = [v[0] for v in votes]
            rank = max(set(ids), key=lambda k: (ids.count(k), -k))
            first = min((v for v in votes if v[0] == rank), key=lambda v: v[2]["seconds"])
            return {"rank": rank, "op": first[1], "line": ranks[rank].get("line"),
                    "seconds": first[2]["seconds"], "message": (first[2]["error"] or "")[:400]}
        first = min(ranks, key=lambda r: r.get("seconds", 1e9))
        return {"rank": None, "op": None, "line": None, "seconds": first.get("seconds"),
                "message": (first.get("error") or "")[:400]}
    for r in ranks:  # monitored_barrier: rank 0 reports
        m = _MONITORED.search(r.get("barrier") or "")
        if m:
            return {"rank": [int(x) for x in m.group(1).replace(",", " ").split()], "op": None, "line": None,
                    "seconds": r["barrier_s"], "message": r["barrier"][:400]}
    return {"rank": None, "op": None, "line": None, "seconds": max(r.get("barrier_s", 0.0) for r in ranks),
            "message": "; ".join(str(r.get("barrier"))[:150] for r in ranks)}
