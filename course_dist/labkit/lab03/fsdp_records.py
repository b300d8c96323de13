"""FSDP2's own record of what it issued when (issue 34 class 5: the order of a prefetch list, not only its
members). Every ``FSDPParamGroup`` step is wrapped in ``record_function`` ("FSDP::pre_backward (blocks.2)",
"FSDP::backward_prefetch for blocks.1", "FSDP::all_gather (blocks.1)"); ``fsdp_records`` collects those
labels in the order FSDP2 enters them, and ``prefetched`` reads, per block and pass, which blocks that block
asked FSDP2 to gather ahead of time, in the order it asked.

    with fsdp_records(records := []):
        loss(model).backward()
    prefetched(records, n_blocks)   # {"forward": [[1, 2], [2], []], "backward": [[], [0], [1, 0]]}
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def fsdp_records(out: list[str]) -> Iterator[list[str]]:
    """Append to ``out`` every label FSDP2's parameter groups record (``record_function``: "FSDP::pre_backward
    (blocks.2)", "FSDP::backward_prefetch for blocks.1", "FSDP::all_gather (blocks.1)", ...) in the order
    FSDP2 enters them: its own record of what it issued when, without a profiler (whose start and stop lines
    would fill every rank's output). Observes only: each label still goes to torch's ``record_function``."""
    from torch.distributed.fsdp._fully_shard import _fsdp_param_group as group_module

    real = group_module.record_function

    def recording(name: str, *args: Any, **kwargs: Any) -> Any:
        out.append(name)
        return real(name, *args, **kwargs)

    group_module.record_function = recording
    try:
        yield out
    finally:
        group_module.record_function = real


_PRE = re.compile(r"FSDP::pre_(forward|backward)(?: \((.+)\))?$")
_PREFETCH = re.compile(r"FSDP::(forward|backward)_prefetch for (.+)$")


def prefetched(records: list[str], n_blocks: int) -> dict[str, list[list[int]]]:
    """From FSDP2's records of one step: per pass, per block, the blocks whose all-gather that block asked
    for ahead of time (its prefetch), in the order it asked (the root's own prefetch is left out)."""
    out = {kind: [[] for _ in range(n_blocks)] for kind in ("forward", "backward")}
    current: int | None = None
    for name in records:
        if m := _PRE.match(name):
            fqn = m.group(2) or ""
            current = int(fqn.split(".")[1]) if fqn.startswith("blocks.") else None
        elif (m := _PREFETCH.match(name)) and current is not None and m.group(2).startswith("blocks."):
            out[m.group(1)][current].append(int(m.group(2).split(".")[1]))
    return out


def want_prefetched(order: list[str], depth: int | None, kind: str) -> list[list[int]]:
    """The prefetches each block should issue, in order, from FSDP2's recorded post-forward order: in forward
    the next ``depth`` blocks (nearest first), in backward the ``depth`` blocks before it (nearest first: the
    backward needs block k-1 before k-2); implicit (None): nothing in forward, one behind in backward."""
    chain = [int(n.split(".")[1]) for n in order if n.startswith("blocks.")]
    ahead = {"forward": 0 if depth is None else depth, "backward": 1 if depth is None else depth}[kind]
    out = [[] for _ in chain]
    for pos, i in enumerate(chain):
        out[i] = chain[pos + 1:pos + 1 + ahead] if kind == "forward" else chain[max(pos - ahead, 0):pos][::-1]
    return out
