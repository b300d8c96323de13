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
STEPS = 60


def _replica(replica_id: int, lighthouse: str, log: str, kill_at: int | None, steps: int) -> None:
    """One replica group of one process: train until ``steps`` commits; SIGKILL itself after ``kill_at``."""
    from datetime import timedelta

    import torch
    import torch.distributed as dist
    from torch import nn
    from torchft import Manager
    from torchft.ddp import DistributedDataParallel
    from torchft.optim import OptimizerWrapper
    from torchft.process_group import ProcessGroupGloo

    torch.set_num_threads(1)
    store = dist.TCPStore("localhost", 0, is_master=True, wait_for_workers=False)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 4))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)

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
    with open(log, "a") as f:
        start = {"replica": replica_id, "event": "start", "t": time.time(), "pid": os.getpid()}
        f.write(json.dumps(start) + "\n")
        while manager.current_step() < steps:
            t0, before = time.perf_counter(), manager.current_step()
            g = torch.Generator().manual_seed(manager.current_step())
            x, y = torch.randn(8, 32, generator=g), torch.randn(8, 4, generator=g)
            optim.zero_grad()
            ((ddp(x) - y) ** 2).mean().backward()
            optim.step()  # torchft applies it only if every participant's step went through (should_commit)
            committed = manager.current_step() > before
            time.sleep(max(0.0, STEP_S - (time.perf_counter() - t0)))
            f.write(json.dumps({"replica": replica_id, "event": "step", "t": time.time(),
                                "step": manager.current_step(), "committed": bool(committed),
                                "participants": manager.num_participants()}) + "\n")
            f.flush()
            if kill_at is not None and manager.current_step() >= kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
        flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
        f.write(json.dumps({"replica": replica_id, "event": "done", "t": time.time(),
                            "params": flat.tolist()[:64], "sum": float(flat.double().sum())}) + "\n")
    manager.shutdown(wait=False)


def _run_once(tmp: Path, steps: int, replace: bool = True) -> dict[str, Any]:
    from torchft._torchft import LighthouseServer

    lighthouse = LighthouseServer(bind="[::]:0", min_replicas=1, join_timeout_ms=100)
    log = str(tmp / "events.jsonl")
    ctx = mp.get_context("spawn")
    try:
        r0 = ctx.Process(target=_replica, args=(0, lighthouse.address(), log, None, steps))
        r1 = ctx.Process(target=_replica, args=(1, lighthouse.address(), log, KILL_AT, steps))
        r0.start()
        r1.start()
        r1.join(timeout=300)
        killed_at = time.time()
        new = ctx.Process(target=_replica, args=(1, lighthouse.address(), log, None, steps))
        if replace:
            new.start()
        r0.join(timeout=300)
        if replace:
            new.join(timeout=300)
    finally:
        lighthouse.shutdown()
    events = [json.loads(line) for line in Path(log).read_text().splitlines()]
    return _analyse(events, killed_at)


def _analyse(events: list[dict], killed_at: float) -> dict[str, Any]:
    s0 = [e for e in events if e["replica"] == 0 and e["event"] == "step" and e["committed"]]
    gaps = [b["t"] - a["t"] for a, b in zip(s0, s0[1:], strict=False)]
    steps0 = [e["step"] for e in s0]
    rolled_back = sum(1 for a, b in zip(steps0, steps0[1:], strict=False) if b <= a)
    new_steps = [e for e in events if e["replica"] == 1 and e["event"] == "step" and e["t"] > killed_at
                 and e["committed"]]
    starts = [e for e in events if e["replica"] == 1 and e["event"] == "start"]
    done = {e["replica"]: e for e in events if e["event"] == "done"}
    last_old = max((e["step"] for e in events if e["replica"] == 1 and e["event"] == "step"
                    and e["t"] <= killed_at), default=None)
    return {
        "survivor_rollbacks": rolled_back,
        "survivor_max_gap_s": max(gaps) if gaps else float("nan"),
        "survivor_median_step_s": statistics.median(gaps) if gaps else float("nan"),
        "new_start_s": starts[-1]["t"] - killed_at if len(starts) > 1 else float("nan"),
        "recovery_s": new_steps[0]["t"] - killed_at if new_steps else float("nan"),
        "killed_after_step": last_old,
        "resumed_at_step": new_steps[0]["step"] if new_steps else None,
        "same_params": bool(done.get(0) and done.get(1) and done[0]["params"] == done[1]["params"]),
    }


def _torchrun_recovery() -> str:
    page = Path(__file__).resolve().parent / "results" / "homework.md"
    if not page.is_file():
        return "bench/results/homework.md not found"
    lines = [ln for ln in page.read_text().splitlines() if "first resumed step" in ln]
    return lines[0].strip() if lines else "no recovery line in bench/results/homework.md"


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
    runs, alone = [], []
    for _ in range(rounds):  # interleaved: with a replacement, then without
        for replace, out in ((True, runs), (False, alone)):
            with tempfile.TemporaryDirectory(prefix="bench-torchft-") as tmp:
                out.append(_run_once(Path(tmp), 30 if quick else STEPS, replace))
    keys = ["recovery_s", "new_start_s", "survivor_max_gap_s", "survivor_median_step_s"]
    rows = []
    for k in keys:
        xs = sorted(r[k] for r in runs)
        rows.append(f"| {k} | {xs[0]:.2f} / {statistics.median(xs):.2f} / {xs[-1]:.2f} |")
    xs = sorted(r["survivor_max_gap_s"] for r in alone)
    rows.append(f"| survivor_max_gap_s, no replacement | {xs[0]:.2f} / {statistics.median(xs):.2f} / "
                f"{xs[-1]:.2f} |")
    facts = [f"| {k} (per run) | {[r[k] for r in runs]} |"
             for k in ("survivor_rollbacks", "killed_after_step", "resumed_at_step", "same_params")]
    facts.append(f"| survivor_rollbacks, no replacement | {[r['survivor_rollbacks'] for r in alone]} |")
    text = "\n".join([
        title, "",
        f"{'QUICK smoke run - not a measurement' if quick else 'Full run'}; {rounds} run(s); torchft "
        f"{getattr(sys.modules['torchft'], '__version__', '0.2.0')} on PYTHONPATH (not pinned); "
        f"2 replica groups x 1 process, gloo, steps padded to {STEP_S * 1e3:.0f} ms, replica 1 SIGKILLed "
        f"after step {KILL_AT} and replaced at once. Load average (1 min) {load:.1f} at start. "
        f"Machine: {machine()}.", "",
        "| what | min / median / max (s) |", "|---|---|", *rows, "",
        "| fact | value |", "|---|---|", *facts, "",
        f"torchrun restart path (homework page, not re-measured): {_torchrun_recovery()}", "",
        "recovery_s: from the kill to the replacement's first committed step (process start, imports, "
        "quorum, heal from the live peer). survivor_max_gap_s: the survivor's longest time between two "
        "committed steps; 'no replacement' runs show it when nobody joins (what it waits on inside torchft "
        "is not broken down here). CPU/gloo figures, not GPU ones.", "",
    ])
    write("live_recovery", text)
    return {"runs": runs, "alone": alone}


if __name__ == "__main__":
    print(main(quick="--quick" in sys.argv))
