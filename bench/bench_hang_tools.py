"""torch's own hang tooling vs lab 05's trace-based diagnosis on the same six planted hangs (issue 26 item 4).

For each planted hang of exercise 1 (world 3, gloo, the lab's culprit ranks), in every round, interleaved:

- **trace** (the lab): ``lab05.plant`` (3 s launcher timeout, ``trace=True``) and the reference ``diagnose``;
- **DETAIL**: ``TORCH_DISTRIBUTED_DEBUG=DETAIL``; the culprit is the rank the others name in their fingerprint
  mismatch errors, its line from its own traceback;
- **flight recorder**: ``TORCH_FR_BUFFER_SIZE=2000``, every rank's dump after the gloo timeout (2 s), read as
  the first (group, seq id) where the ranks disagree; and torch's analyzer (``fr_trace``) on the same dumps;
- **monitored_barrier**: on a group of its own, after the hang's gloo timeout (2 s).

Seconds are from the hang's start to the answer on the rank holding it (min / median / max over rounds), plus
the analysis (diagnose, fr_read, fr_trace). Each cell says whether the rank, op and line named equal the
planted truth. CPU + gloo on a shared 2-core box: not a statement about NCCL on GPUs (the NCCL watchdog dumps
the flight recorder on timeout by itself; gloo has no such watchdog here).

    python -m bench.bench_hang_tools            # 3 rounds (~10 min on a loaded 2-core box)
    python -m bench.bench_hang_tools --quick    # 1 round, a smoke run
"""

from __future__ import annotations

import json
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

log = logging.getLogger("bench.hang_tools")
CULPRITS = {"extra_collective": 1, "op_mismatch": 2, "shape_mismatch": 0, "conditional_barrier": 1,
            "uneven_epoch": 2, "ddp_unused": 0}  # the lab's visible cases
TOOLS = ("trace (lab)", "DETAIL", "flight recorder", "fr_trace analyzer", "monitored_barrier")


def _trace(diagnose: Any, case: str, culprit: int) -> dict[str, Any]:
    from course_dist.labkit import lab05

    t0 = time.perf_counter()
    err = lab05.plant([(case, culprit)], timeout=3.0)[0]
    got = diagnose(err)
    return {**got, "seconds": time.perf_counter() - t0}


def _round(diagnose: Any) -> dict[tuple[str, str], dict[str, Any]]:
    from course_dist.labkit.lab05 import hang_tools as ht

    out = {}
    for case, culprit in CULPRITS.items():
        out[(case, "trace (lab)")] = _trace(diagnose, case, culprit)
        out[(case, "DETAIL")] = ht.named(ht.run_tool(case, culprit, "detail"), "detail")
        fr = ht.run_tool(case, culprit, "flight_recorder")
        out[(case, "flight recorder")] = got = ht.named(fr, "flight_recorder")
        t0 = time.perf_counter()
        ana = ht.fr_analyze(fr["dir"])
        out[(case, "fr_trace analyzer")] = {"rank": ana["rank"], "op": ana["error_type"], "line": None,
                                           "seconds": got["seconds"] + time.perf_counter() - t0}
        out[(case, "monitored_barrier")] = ht.named(ht.run_tool(case, culprit, "monitored_barrier"),
                                                    "monitored_barrier")
    return out


def _cell(runs: list[dict[str, Any]], truth: dict[str, Any]) -> str:
    names = {str(r.get("rank")) for r in runs}
    rank_ok = all(r.get("rank") == truth["rank"] for r in runs)
    line_ok = all(r.get("line") == truth["line"] for r in runs)
    ops = sorted({str(r.get("op")) for r in runs})
    secs = [float(r["seconds"]) for r in runs if r.get("seconds") is not None]
    from bench import spread

    timing = f"{spread(secs, '{:.2f}')} s" if secs else "no time (a rank was killed)"

    rank = f"rank {'/'.join(sorted(names))}" + (" ✓" if rank_ok else " ✗")
    line = "line ✓" if line_ok else ("no line" if all(r.get("line") is None for r in runs) else "line ✗")
    return f"{rank}; {'/'.join(ops)}; {line}; {timing}"


def main(quick: bool = False) -> dict[str, Any]:
    """Run the rounds, write ``bench/results/hang_tools.md`` and return per-tool counts and medians."""
    from bench import machine, write
    from bench.bench_lab05 import reference
    from course_dist.labkit import lab05

    diagnose = reference(("diagnose_solution",))["diagnose"]
    rounds = 1 if quick else int(os.environ.get("HANG_TOOLS_ROUNDS", "3"))
    lab05.plant([("op_mismatch", 1)], timeout=3.0)  # warm the forkserver: not inside a timed round
    loads, t_start = [], time.perf_counter()
    results: list[dict] = []
    for i in range(rounds):
        loads.append(os.getloadavg()[0])
        results.append(_round(diagnose))
        raw = [{"case": c, "tool": t, **v} for r in results for (c, t), v in r.items()]
        Path(tempfile.gettempdir(), "hang_tools_raw.json").write_text(json.dumps(raw, default=str))
        log.info("round %d/%d done", i + 1, rounds)
    header = "| hang (culprit) | " + " | ".join(TOOLS) + " |"
    lines = [
        "# torch's hang tooling vs the lab's trace-based diagnosis (bench/bench_hang_tools.py)",
        "",
        f"{'QUICK smoke run - not a measurement' if quick else f'{rounds} rounds'}; world 3, gloo, loopback;"
        f" {time.perf_counter() - t_start:.0f} s; load average per round "
        f"{', '.join(f'{x:.1f}' for x in loads)}. Machine: {machine()}.",
        "",
        "Each cell: the rank named (✓ = the planted culprit), the op it names, whether it names the planted "
        "line, and seconds from the hang's start to the answer (min / median / max over rounds). CPU + gloo: "
        "not an NCCL/GPU figure.",
        "",
        header,
        "|---" * (len(TOOLS) + 1) + "|",
    ]
    summary: dict[str, Any] = {}
    for case, culprit in CULPRITS.items():
        truth = lab05.truth(case, culprit)
        cells = [_cell([r[(case, t)] for r in results], truth) for t in TOOLS]
        lines.append(f"| {case} ({culprit}) | " + " | ".join(cells) + " |")
    for t in TOOLS:
        runs = [(r[(c, t)], lab05.truth(c, k)) for r in results for c, k in CULPRITS.items()]
        summary[t] = {"rank_right": sum(g.get("rank") == w["rank"] for g, w in runs) / len(runs),
                      "line_right": sum(g.get("line") == w["line"] for g, w in runs) / len(runs),
                      "median_s": statistics.median([float(g["seconds"]) for g, _ in runs
                                                     if g.get("seconds") is not None] or [float("nan")])}
    lines += ["", "| tool | culprit rank right | planted line right | median seconds |", "|---|---|---|---|"]
    lines += [f"| {t} | {s['rank_right']:.0%} | {s['line_right']:.0%} | {s['median_s']:.2f} |"
              for t, s in summary.items()]
    path = write("hang_tools", "\n".join(lines) + "\n")
    log.info("wrote %s: %s", path, summary)
    return summary


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    print(main(quick="--quick" in sys.argv[1:]))
