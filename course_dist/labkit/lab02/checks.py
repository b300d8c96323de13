"""Lab 02 checks: the rank functions behind the tests of exercises 2 and 3 (broadcast, ring) and the
parent-side reading of the collective trace (which ops the ring used, how many bytes each rank sent).

Each rank function takes the student's function as its argument::

    res = course_dist.launch(lab02.ring_check, world_size=3, args=(ring_all_reduce, [0, 5, 11]), trace=True)
    lab02.ring_traffic(res.trace, [0, 5, 11])      # per length: ops used, bytes sent per rank
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist

from course_dist.labkit.lab02.model import fingerprint, make_model, model_config

P2P_OPS = ("send", "recv", "isend", "irecv")  # what a ring from point-to-point messages may use


def broadcast_check(broadcast_model: Callable, src: int = 0) -> dict[str, Any]:
    """Rank function: seed differently per rank, build the model, fingerprint every named parameter and
    buffer, ``broadcast_model(model, src)``, fingerprint again; also whether the parameter/buffer objects are
    the same ones (an in-place update) afterwards."""
    model = make_model(model_config("tiny"), seed=100 + dist.get_rank())  # rank-dependent on purpose

    def named() -> dict[str, torch.Tensor]:
        return {**dict(model.named_parameters()), **dict(model.named_buffers())}

    before = {k: fingerprint([t]).tolist() for k, t in named().items()}
    ids = {k: id(t) for k, t in named().items()}
    broadcast_model(model, src)
    after = {k: fingerprint([t]).tolist() for k, t in named().items()}
    same = [k for k, t in named().items() if ids.get(k) == id(t)]
    return {"before": before, "after": after, "replaced": sorted(set(ids) - set(same))}


def ring_input(n: int, rank: int) -> torch.Tensor:
    """Rank ``rank``'s input of length ``n`` for the ring tests (float32, deterministic)."""
    return torch.randn(n, generator=torch.Generator().manual_seed(1000 * rank + n))


def ring_check(ring_all_reduce: Callable, lengths: list[int]) -> dict[int, torch.Tensor]:
    """Rank function: run ``ring_all_reduce`` on ``ring_input(n, rank)`` for each length, in place. Returns
    ``{n: result (cpu)}``. A barrier from this harness separates the lengths in the collective trace (launch
    with ``trace=True`` and read it with ``ring_traffic``)."""
    from course_dist import device

    out = {}
    for n in lengths:
        dist.barrier()  # the marker ring_traffic splits the trace at
        t = ring_input(n, dist.get_rank()).to(device())
        res = ring_all_reduce(t)
        if res is not None and n and res.data_ptr() != t.data_ptr():
            raise AssertionError(f"length {n}: ring_all_reduce must work in place and return its input "
                                 f"(returned a new tensor)")
        out[n] = t.cpu()
    dist.barrier()
    return out


def _element_size(dtype: str | None) -> int:
    dt = getattr(torch, dtype or "", None)
    return torch.empty(0, dtype=dt).element_size() if isinstance(dt, torch.dtype) else 0


def ring_traffic(trace: Any, lengths: list[int]) -> list[dict[str, Any]]:
    """From ``launch(ring_check, ..., trace=True).trace``: per length (in order), the sorted list of ops the
    student's code issued (everything but the harness's barriers) and the bytes each rank sent
    (send/isend)."""
    world = int(trace.attrs.get("world_size") or (trace["rank"].max() + 1))
    out = [{"n": n, "ops": set(), "sent_bytes": [0] * world} for n in lengths]
    for rank in range(world):
        rows = trace[trace["rank"] == rank].sort_values("t_start", kind="stable")
        seg = -1
        for row in rows.itertuples():
            if row.op == "barrier" and "labkit" in str(row.site):
                seg += 1
                continue
            if not 0 <= seg < len(lengths):
                continue
            out[seg]["ops"].add(row.op)
            if row.op in ("send", "isend") and row.shape is not None:
                numel = 1
                for d in row.shape:
                    numel *= int(d)
                out[seg]["sent_bytes"][rank] += numel * _element_size(row.dtype)
    for rec in out:
        rec["ops"] = sorted(rec["ops"])
    return out


def ring_traffic_problem(rec: dict[str, Any], world: int, element_size: int = 4) -> str | None:
    """None when one length's traffic is a ring's: point-to-point ops only, 2(R-1)/R * n elements sent per
    rank on average (2(R-1) * n in all) and no rank above 2(R-1) * ceil(n/R); else what is wrong."""
    n, sent = rec["n"], rec["sent_bytes"]
    bad_ops = [op for op in rec["ops"] if op not in P2P_OPS]
    if bad_ops:
        return f"world {world}, length {n}: used {bad_ops}; a ring uses only {list(P2P_OPS)}"
    want_total = 2 * (world - 1) * n * element_size
    cap = 2 * (world - 1) * -(-n // world) * element_size
    if sum(sent) != want_total or max(sent, default=0) > cap:
        return (f"world {world}, length {n}: bytes sent per rank {sent} (total {sum(sent)}); a ring sends "
                f"2(R-1)/R*n*4 = {want_total / world:.1f} per rank on average, {want_total} in all, at most "
                f"{cap} on one rank")
    return None
