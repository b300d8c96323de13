"""Collective trace: what every rank called, as one DataFrame, and the first place where ranks disagree.

``launch(fn, trace=True)`` records each ``torch.distributed`` collective a rank issues (``_record``) and
returns ``result.trace`` (also ``err.trace`` on RankError / LaunchTimeout, holding what was written before the
failure). Columns: rank, seq (per group, per rank), op, shape, dtype, group, call site, t_start, t_end (None:
never returned or never waited on), group_ranks, called. ``op`` names the collective: torch's other names for
one (``all_gather_into_tensor`` and ``_all_gather_base`` for ``all_gather_single``, ``reduce_scatter_tensor``
and ``_reduce_scatter_base`` for ``reduce_scatter_single``) are recorded under it, so counts and bytes do
not depend on the spelling; ``called`` is the name the code used.

Why our own trace when torch has ``TORCH_DISTRIBUTED_DEBUG=DETAIL``: DETAIL reports most mismatches, but a
rank that *skips* a collective and then calls a barrier is reported as a REDUCE/GATHER mismatch; lining up
per-rank sequences names the rank that skipped and where each rank was.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

COLUMNS = ["rank", "seq", "op", "shape", "dtype", "group", "site", "t_start", "t_end"]
P2P_GROUP = "p2p"


def to_frame(rows: list[dict], world_size: int) -> pd.DataFrame:
    """Records from the ranks' JSONL files -> DataFrame by (rank, group, seq); ``attrs['world_size']`` set."""
    df = pd.DataFrame(rows)
    for c in COLUMNS + ["group_ranks", "called"]:
        if c not in df:
            df[c] = None
    df["called"] = df["called"].where(df["called"].notna(), df["op"])
    df["shape"] = df["shape"].map(
        lambda s: tuple(tuple(x) if isinstance(x, list) else x for x in s) if isinstance(s, list) else s
    )
    df = (
        df[COLUMNS + ["group_ranks", "called"]]
        .sort_values(["rank", "group", "seq"], kind="stable")
        .reset_index(drop=True)
    )
    df.attrs["world_size"] = world_size
    return df


@dataclass
class Divergence:
    """Where ranks first disagree. ``ranks``: the odd ones out; ``calls``: every member rank's call."""

    seq: int
    group: str
    reason: str  # "op", "shape", "dtype" or "missing"
    ranks: list[int]
    calls: dict[int, dict | None] = field(default_factory=dict)
    message: str = ""
    ambiguous: bool = False
    """No strict majority (always so when two ranks disagree): ``ranks`` then holds every disagreeing rank,
    since "skipped a call" on one rank and "made an extra call" on the other leave the same trace."""
    behind: int | None = None
    """When ambiguous: the rank that is behind in the program (its call sits earlier in the same file, or it
    never made the call), else None. A fact, not a verdict: read each rank's stack to decide."""

    def __str__(self) -> str:
        return self.message


def _call(row: Any) -> dict:
    called = getattr(row, "called", None) or row.op
    return {"op": row.op, "shape": row.shape, "dtype": row.dtype, "site": row.site, "called": called}


def _fmt(call: dict | None) -> str:
    if call is None:
        return "never called it"
    shape = f"(shape={list(call['shape'])}, {call['dtype']})" if call["shape"] is not None else "()"
    alias = f" (as {call['called']})" if call.get("called", call["op"]) != call["op"] else ""
    return f"called {call['op']}{shape}{alias} at {call['site']}"


def first_divergence(trace: pd.DataFrame, world_size: int | None = None) -> Divergence | None:
    """The first sequence number where ranks disagree (different op, shape or dtype, or a rank that
    never called it), or None when every group's sequences agree. Point-to-point ops (send/recv) are
    not compared.

    When several groups diverge, the one whose divergent call started earliest is reported.
    """
    if not isinstance(trace, pd.DataFrame):
        raise TypeError(
            f"first_divergence expects the trace DataFrame (result.trace), got {type(trace).__name__}"
        )
    world = world_size or trace.attrs.get("world_size") or (int(trace["rank"].max()) + 1 if len(trace) else 0)
    found: list[tuple[float, Divergence]] = []
    for gname, g in trace[trace["group"] != P2P_GROUP].groupby("group", sort=False):
        granks = next((r for r in g["group_ranks"] if r), None)
        members = list(granks) if granks else list(range(world))
        by_rank = {r: {int(s.seq): s for s in rows.itertuples()} for r, rows in g.groupby("rank")}
        for seq in range(int(g["seq"].max()) + 1):
            calls = {r: (_call(by_rank[r][seq]) if seq in by_rank.get(r, {}) else None) for r in members}
            div = _compare(seq, str(gname), calls, by_rank)
            if div is not None:
                t = min(float(by_rank[r][seq].t_start) for r in members if seq in by_rank.get(r, {}))
                found.append((t, div))
                break
    return min(found, key=lambda x: x[0])[1] if found else None


def _compare(seq: int, gname: str, calls: dict[int, dict | None], by_rank: dict) -> Divergence | None:
    # a missing dtype is NaN in the frame: NaN != NaN, so it compared equal only while every row held the one
    # np.nan object (a copied or unpickled frame has several): compare it as None
    def key(c: dict) -> tuple:
        return c["op"], c["shape"], c["dtype"] if isinstance(c["dtype"], str) else None

    keys = {r: (None if c is None else key(c)) for r, c in calls.items()}
    if len(set(keys.values())) <= 1:
        return None
    counts = Counter(keys.values()).most_common()
    # A tie for the most common call (two ranks that disagree, or 2 against 2) has no odd one out: a vote
    # would blame whichever rank happens to be listed second, whatever the bug.
    ambiguous = len(counts) > 1 and counts[0][1] == counts[1][1]
    majority = counts[0][0]
    odd = sorted(r for r, k in keys.items() if k != majority)
    if majority is None:  # most ranks never got here: the few that did are ahead, the rest are the story
        odd = sorted(r for r, k in keys.items() if k is None)
    odd_key = None
    if ambiguous:  # every rank is a suspect; the reason compares the distinct calls
        odd = sorted(keys)
        distinct = [k for k in set(keys.values()) if k is not None]
        majority, odd_key = (distinct[0], distinct[1]) if len(distinct) > 1 else (None, None)
    missing = [r for r in odd if keys[r] is None]
    ref = next(r for r, k in keys.items() if k == majority) if majority is not None else None
    if ambiguous and not missing and odd_key is not None:
        reason = "op" if odd_key[0] != majority[0] else "shape" if odd_key[1] != majority[1] else "dtype"
    elif missing:
        reason = "missing"
    elif ref is not None and keys[odd[0]][0] != keys[ref][0]:
        reason = "op"
    elif ref is not None and keys[odd[0]][1] != keys[ref][1]:
        reason = "shape"
    else:
        reason = "dtype"
    lines = [f"collective #{seq} in group {gname}: ranks disagree ({reason})"]
    behind = _behind(calls) if ambiguous else None
    for r in sorted(calls):
        flag = r == behind if ambiguous else r in odd
        mark = ("   <- behind" if ambiguous else "   <- odd one out") if flag else ""
        lines.append(f"  rank {r} {_fmt(calls[r])}{mark}")
    if ambiguous:
        lines.append(
            "  ambiguous: no majority, so the trace cannot say which rank is wrong (one rank skipping a call "
            "and the other making an extra one leave the same trace); read each rank's stack (err.stacks)"
            + (f": rank {behind} is behind in the program" if behind is not None else "")
        )
        return Divergence(seq, gname, reason, odd, calls, "\n".join(lines), True, behind)
    if reason == "op" and ref is not None:  # a rank that skipped a collective is one call ahead of the others
        for r in odd:
            if _looks_skipped(calls[r], calls[ref], by_rank.get(ref, {}).get(seq + 1)):
                lines.append(
                    f"  rank {r} looks like it skipped {calls[ref]['op']} #{seq} at {calls[ref]['site']} "
                    f"(a branch that differs by rank?): its #{seq} is a later call"
                )
    return Divergence(seq, gname, reason, odd, calls, "\n".join(lines))


def _behind(calls: dict[int, dict | None]) -> int | None:
    """The one rank that never made the call, or whose call sits earliest in a file they all share."""
    missing = [r for r, c in calls.items() if c is None]
    if missing:
        return missing[0] if len(missing) == 1 else None
    sites = {r: _split_site(c["site"]) for r, c in calls.items() if c is not None}
    if len({f for f, _ in sites.values()}) != 1 or min(ln for _, ln in sites.values()) < 0:
        return None
    first = min(ln for _, ln in sites.values())
    earliest = [r for r, (_, ln) in sites.items() if ln == first]
    return earliest[0] if len(earliest) == 1 else None


def _split_site(site: str) -> tuple[str, int]:
    path, _, line = (site or "").rpartition(":")
    return path, int(line) if line.isdigit() else -1


def _looks_skipped(mine: dict, theirs: dict, their_next: Any) -> bool:
    """Our call is the one the others make next, or sits later in the same file than theirs."""
    if their_next is not None and their_next.op == mine["op"]:
        return True
    (f1, l1), (f2, l2) = _split_site(mine["site"]), _split_site(theirs["site"])
    return f1 == f2 and l1 > l2 >= 0
