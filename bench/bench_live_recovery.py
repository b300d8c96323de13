"""Recovery without a restart (issue 26 item 6): torchft's per-step fault tolerance against the torchrun
restart path, on this machine (CPU, gloo).

    PYTHONPATH=<torchft 0.2.0 and its opentelemetry deps> python -m bench live_recovery [--quick]

torchft is not among the course's pinned requirements. torchft 0.2.0 (cp311 wheel from the package index,
``Requires-Dist: torch>=2.7``) imports and runs against the pinned torch 2.13.0+cpu when put on ``PYTHONPATH``
beside its three opentelemetry packages (``pip install --target DIR``); without it this bench writes a page
saying it was skipped, and why.

Set-up: a torchft ``LighthouseServer`` and two replica groups of one process each (own TCPStore, torchft's
``ProcessGroupGloo``, ``Manager(min_replica_size=1)``, its ``DistributedDataParallel`` and
``OptimizerWrapper``), a small MLP, every step padded to ``STEP_S`` so steps are comparable. Replica 1 is
SIGKILLed after step ``KILL_AT``; the parent starts a fresh replica 1 process at once (what a scheduler's
replacement would do), which joins the next quorum and heals: torchft sends it replica 0's live state (HTTP
checkpoint transport) and it goes on from replica 0's step. Measured from each step's commit timestamps:
- survivor: committed steps lost (0 when it never rolled back) and its longest gap between two commits;
- the replaced replica: seconds from the kill to its first committed step (process start, imports, quorum,
  heal) and the step it resumed at;
- both replicas' parameters equal after the last step (bitwise).
The homework's torchrun restart path (every rank restarted, resumed from the last checkpoint) is quoted from
bench/results/homework.md when that page has it; it is not re-measured here.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

STEP_S = 0.05  # every step padded to this: the survivor's gap is then read in steps
KILL_AT = 20
AFTER = 20  # steps both replicas take after the replacement's first commit (then params are compared)
MAX_STEPS = 5000  # a hard stop, whatever happens


def _stop_step(path: Path) -> int:
    try:
        return int(path.read_text())
    except (FileNotFoundError, ValueError):
        return MAX_STEPS


def _publish(path: Path, value: int) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(str(value))
    os.replace(tmp, path)


def _replica(replica_id: int, lighthouse: str, tmp: str, kill_at: int | None, go: str | None) -> None:
    """One replica group of one process. Waits for the file ``go`` first if given (a warm spare: imports
    done, model built); SIGKILLs itself after step ``kill_at``; stops at the step in ``tmp/stop``."""
    from datetime import timedelta

    import torch
    import torch.distributed as dist
    from torch import nn
    from torchft import Manager
    from torchft.ddp import DistributedDataParallel
    from torchft.optim import OptimizerWrapper
    from torchft.process_group import ProcessGroupGloo

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 4))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    while go is not None and not Path(go).exists():
        time.sleep(0.005)
    store = dist.TCPStore("localhost", 0, is_master=True, wait_for_workers=False)

    def state_dict() -> dict[str, Any]:
        return {"model": model.state_dict(), "optim": opt.state_dict()}

    def load_state_dict(sd: dict[str, Any]) -> None:
        model.load_state_dict(sd["model"])
        opt.load_state_dict(sd["optim"])

    manager = Manager(pg=ProcessGroupGloo(), min_replica_size=1, load_state_dict=load_state_dict,
                      state_dict=state_dict, replica_id=f"replica{replica_id}", store_addr="localhost",
                      store_port=store.port, rank=0, world_size=1, lighthouse_addr=lighthouse,
                      timeout=timedelta(seconds=10), quorum_timeout=timedelta(seconds=30))
    ddp = DistributedDataParallel(manager, model)
    optim = OptimizerWrapper(manager, opt)
    me, stop, first = os.getpid(), Path(tmp) / "stop", None
    with open(Path(tmp) / "events.jsonl", "a") as f:
        f.write(json.dumps({"replica": replica_id, "pid": me, "event": "start", "t": time.time()}) + "\n")
        while manager.current_step() < _stop_step(stop):
            t0, before = time.perf_counter(), manager.current_step()
            g = torch.Generator().manual_seed(manager.current_step())
            x, y = torch.randn(8, 32, generator=g), torch.randn(8, 4, generator=g)
            optim.zero_grad()
            ((ddp(x) - y) ** 2).mean().backward()
            optim.step()  # torchft applies it only if every participant's step went through (should_commit)
            committed = manager.current_step() > before
            time.sleep(max(0.0, STEP_S - (time.perf_counter() - t0)))
            f.write(json.dumps({"replica": replica_id, "pid": me, "event": "step", "t": time.time(),
                                "step": manager.current_step(), "committed": committed}) + "\n")
            f.flush()
            if committed and first is None and replica_id == 1 and kill_at is None:
                first = manager.current_step()  # the replacement's first commit: both stop AFTER steps later
                _publish(stop, first + AFTER)
            # only once both replicas train together: a survivor still starting up would have nobody to heal
            # from (seen in a first run under load: the survivor joined after the kill and both began at 0)
            if kill_at is not None and manager.current_step() >= kill_at and manager.num_participants() >= 2:
                os.kill(me, signal.SIGKILL)
        flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
        f.write(json.dumps({"replica": replica_id, "pid": me, "event": "done", "t": time.time(),
                            "step": manager.current_step(), "params": flat.tolist()}) + "\n")
    manager.shutdown(wait=False)


def _run_once(tmp: Path, mode: str) -> dict[str, Any]:
    """``mode``: "warm" (a spare process, imports done, joins when the kill is seen), "cold" (a process
    started after the kill) or "none" (the survivor goes on alone for 40 steps)."""
    from torchft._torchft import LighthouseServer

    lighthouse = LighthouseServer(bind="[::]:0", min_replicas=1, join_timeout_ms=100)
    ctx, go = mp.get_context("spawn"), str(tmp / "go")
    addr = lighthouse.address()
    try:
        procs = [ctx.Process(target=_replica, args=(0, addr, str(tmp), None, None)),
                 ctx.Process(target=_replica, args=(1, addr, str(tmp), KILL_AT, None))]
        spare = ctx.Process(target=_replica, args=(1, addr, str(tmp), None, go if mode == "warm" else None))
        for p in procs + ([spare] if mode == "warm" else []):
            p.start()
        procs[1].join(timeout=600)
        if mode == "none":
            _publish(tmp / "stop", KILL_AT + 40)
        elif mode == "cold":
            spare.start()
        Path(go).touch()
        procs[0].join(timeout=600)
        if mode != "none":
            spare.join(timeout=600)
    finally:
        lighthouse.shutdown()
    events = [json.loads(line) for line in (tmp / "events.jsonl").read_text().splitlines()]
    return _analyse(events, procs[1].pid)


def _analyse(events: list[dict], killed_pid: int | None) -> dict[str, Any]:
    old = [e for e in events if e["pid"] == killed_pid and e["event"] == "step"]
    killed_at = old[-1]["t"]  # logged right before its SIGKILL
    s0 = [e for e in events if e["replica"] == 0 and e["event"] == "step" and e["committed"]]
    gaps = [b["t"] - a["t"] for a, b in zip(s0, s0[1:], strict=False)]
    steps0 = [e["step"] for e in s0]
    new = [e for e in events if e["replica"] == 1 and e["pid"] != killed_pid]
    new_steps = [e for e in new if e["event"] == "step" and e["committed"]]
    starts = [e for e in new if e["event"] == "start"]
    done = {e["replica"]: e for e in events if e["event"] == "done"}
    return {
        "survivor_rollbacks": sum(1 for a, b in zip(steps0, steps0[1:], strict=False) if b <= a),
        "survivor_max_gap_s": max(gaps) if gaps else float("nan"),
        "survivor_median_step_s": statistics.median(gaps) if gaps else float("nan"),
        "joined_s": starts[0]["t"] - killed_at if starts else float("nan"),
        "recovery_s": new_steps[0]["t"] - killed_at if new_steps else float("nan"),
        "killed_after_step": old[-1]["step"],
        "survivor_step_then": max((e["step"] for e in s0 if e["t"] <= new_steps[0]["t"]), default=None)
        if new_steps else None,
        "resumed_at_step": new_steps[0]["step"] if new_steps else None,
        "same_params": bool(0 in done and 1 in done and done[0]["params"] == done[1]["params"]
                            and done[0]["step"] == done[1]["step"]),
    }


def _torchrun_recovery() -> str:
    """The figure compared against: the homework page's SIGKILL -> first resumed step ``total`` row (min /
    median / max s) under its recovery heading, quoted with that heading."""
    page = Path(__file__).resolve().parent / "results" / "homework.md"
    if not page.is_file():
        return "bench/results/homework.md not found"
    lines = page.read_text().splitlines()
    head = next((i for i, ln in enumerate(lines) if "first resumed step" in ln), None)
    if head is None:
        return "no recovery section in bench/results/homework.md"
    total = next((ln for ln in lines[head + 1:] if ln.startswith("| total |")), None)
    if total is None:
        return f"no total row under {lines[head].strip()!r} in bench/results/homework.md"
    mn, med, mx = (c.strip() for c in total.strip().strip("|").split("|")[1:4])
    return (f"{mn} / {med} / {mx} s (min / median / max, the total row of bench/results/homework.md's "
            f"'{lines[head].lstrip('# ').strip()}')")


def main(quick: bool = False) -> dict[str, Any]:
    """Run the benchmark (or record why it cannot run), write ``bench/results/live_recovery.md``."""
    from bench import machine, write

    title = "# Recovery without a restart: torchft vs torchrun's restart (bench/bench_live_recovery.py)"
    try:
        import torchft  # noqa: F401
    except ImportError as exc:
        write("live_recovery", f"{title}\n\nSkipped: torchft is not importable here ({exc}).\n")
        return {}
    load = os.getloadavg()[0]
    rounds = 1 if quick else 3
    runs: dict[str, list[dict]] = {"warm": [], "cold": [], "none": []}
    for _ in range(rounds):  # interleaved: a warm spare, a cold replacement, nobody
        for mode, out in runs.items():
            with tempfile.TemporaryDirectory(prefix="bench-torchft-") as tmp:
                out.append(_run_once(Path(tmp), mode))
    rows = []
    for mode, key in [("warm", "recovery_s"), ("cold", "recovery_s"), ("warm", "joined_s"),
                      ("cold", "joined_s"), ("warm", "survivor_max_gap_s"), ("cold", "survivor_max_gap_s"),
                      ("none", "survivor_max_gap_s"), ("warm", "survivor_median_step_s")]:
        xs = sorted(r[key] for r in runs[mode])
        rows.append(f"| {key}, {mode} | {xs[0]:.2f} / {statistics.median(xs):.2f} / {xs[-1]:.2f} |")
    facts = [f"| {k}, {mode} (per run) | {[r[k] for r in runs[mode]]} |" for mode in ("warm", "cold")
             for k in ("survivor_rollbacks", "killed_after_step", "survivor_step_then", "resumed_at_step",
                       "same_params")]
    facts.append(f"| survivor_rollbacks, none | {[r['survivor_rollbacks'] for r in runs['none']]} |")
    torchrun = _torchrun_recovery()
    text = "\n".join([
        title, "",
        f"{'QUICK smoke run - not a measurement' if quick else 'Full run'}; {rounds} run(s); torchft "
        f"{getattr(sys.modules['torchft'], '__version__', '0.2.0')} on PYTHONPATH (not pinned); "
        f"2 replica groups x 1 process, gloo, steps padded to {STEP_S * 1e3:.0f} ms, replica 1 SIGKILLed "
        f"after step {KILL_AT} and replaced by a warm spare (a process started with the others, imports "
        f"done, model built, that joins when the kill is seen), by a cold process started after the kill, or "
        f"not at all (none); the modes interleaved per round. Load average (1 min) {load:.1f} at start. "
        f"Machine: {machine()}.", "",
        "| what | min / median / max (s) |", "|---|---|", *rows, "",
        "| fact | value |", "|---|---|", *facts, "",
        "The torchrun restart path, against which recovery_s compares (every rank restarted, resumed from "
        f"the last checkpoint; the homework page's figure, not re-measured here): {torchrun}.", "",
        "Times from the killed replica's last logged step (written right before its SIGKILL). joined_s: to "
        "the replacement's Manager being up (cold: process start and imports included). recovery_s: to its "
        "first committed step (quorum, heal from the live peer's state). survivor_max_gap_s: the survivor's "
        "longest time between two committed steps (none: when nobody joins; what it waits on inside torchft "
        "is not broken down here). survivor_step_then / resumed_at_step: where each stood at that first "
        "commit. CPU/gloo figures, not GPU ones.", "",
    ])
    write("live_recovery", text)
    return runs


if __name__ == "__main__":
    print(main(quick="--quick" in sys.argv))
