"""Deterministic fault and straggler injection: ``course_dist.step(i)`` applies the plan for this rank.

A plan is a list of ``Fault`` or the ``COURSE_FAULTS`` string ``kind:rank@step[:seconds][#attempt]``, e.g.
``kill:1@5,slow:0@0:0.05`` (kill rank 1 at step 5; slow rank 0 by 50 ms on every step from 0).

    launch(train, 2, faults=[Fault("kill", rank=1, step=5)])                       # from a notebook
    COURSE_FAULTS=kill:1@5 torchrun --nproc-per-node 2 --max-restarts 1 -m course_dist.run mymod:train

``attempt`` is compared with ``TORCHELASTIC_RESTART_COUNT`` (0 outside torchrun): the default ``attempt=0``
fires only on the first attempt, so a restarted job gets past the fault (``#*`` in the string: every attempt).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import dataclass

from course_dist._log import get_logger

log = get_logger("course_dist.faults")
KINDS = ("kill", "raise", "hang", "slow")


class FaultInjected(RuntimeError):
    """Raised by ``step()`` for a ``raise`` fault (a stand-in for any Python error in a training step)."""


@dataclass(frozen=True)
class Fault:
    """One planned fault.

    Attributes:
        kind: "kill" (SIGKILL, no cleanup: like an OOM kill or a lost node), "raise" (FaultInjected),
            "hang" (sleep forever: a stuck rank), "slow" (sleep ``seconds`` on every step from ``step`` on).
        rank: global rank it applies to.
        step: the step at which it fires (``slow``: the first slowed step).
        seconds: delay per step, required for "slow" only.
        attempt: torchrun restart attempt it fires on (None: every attempt).
    """

    kind: str
    rank: int
    step: int
    seconds: float | None = None
    attempt: int | None = 0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"Fault kind must be one of {KINDS}, got {self.kind!r}")
        if not isinstance(self.rank, int) or self.rank < 0:
            raise ValueError(f"Fault rank must be an int >= 0, got {self.rank!r}")
        if not isinstance(self.step, int) or self.step < 0:
            raise ValueError(f"Fault step must be an int >= 0, got {self.step!r}")
        if self.kind == "slow" and (self.seconds is None or self.seconds < 0):
            raise ValueError(f"Fault('slow') needs seconds >= 0, got {self.seconds!r}")
        if self.attempt is not None and (not isinstance(self.attempt, int) or self.attempt < 0):
            raise ValueError(f"Fault attempt must be None or an int >= 0, got {self.attempt!r}")

    def token(self) -> str:
        s = f"{self.kind}:{self.rank}@{self.step}"
        if self.seconds is not None:
            s += f":{self.seconds:g}"
        if self.attempt != 0:
            s += "#*" if self.attempt is None else f"#{self.attempt}"
        return s


def parse_faults(text: str | None) -> list[Fault]:
    """Parse a ``COURSE_FAULTS`` string; ValueError names the token that does not parse."""
    faults = []
    for token in (text or "").replace(";", ",").split(","):
        token = token.strip()
        if not token:
            continue
        try:
            body, _, attempt_s = token.partition("#")
            kind, _, rest = body.partition(":")
            rank_s, _, rest = rest.partition("@")
            step_s, _, seconds_s = rest.partition(":")
            attempt = None if attempt_s == "*" else int(attempt_s or 0)
            fault = Fault(
                kind.strip(), int(rank_s), int(step_s), float(seconds_s) if seconds_s else None, attempt
            )
        except ValueError as e:
            raise ValueError(
                f"bad fault {token!r} in COURSE_FAULTS={text!r}: expected kind:rank@step[:seconds][#attempt] "
                f"with kind in {KINDS}, e.g. 'kill:1@5' or 'slow:0@0:0.05' ({e})"
            ) from None
        faults.append(fault)
    return faults


def format_faults(faults: str | Fault | list[Fault] | tuple[Fault, ...]) -> str:
    """A plan (string, Fault or list of Fault) as a ``COURSE_FAULTS`` string (validated)."""
    if isinstance(faults, str):
        parse_faults(faults)
        return faults
    if isinstance(faults, Fault):
        faults = [faults]
    if not isinstance(faults, (list, tuple)) or not all(isinstance(f, Fault) for f in faults):
        raise TypeError(f"faults must be a list of Fault or a COURSE_FAULTS string, got {faults!r}")
    return ",".join(f.token() for f in faults)


_cache: tuple[str, list[Fault]] = ("", [])


def _plan() -> list[Fault]:
    global _cache
    text = os.environ.get("COURSE_FAULTS", "")
    if text != _cache[0]:
        _cache = (text, parse_faults(text))
    return _cache[1]


def step(i: int) -> None:
    """Mark training step ``i``; apply any fault planned for (this rank, step i, this attempt)."""
    plan = _plan()
    if not plan:
        return
    from course_dist.context import rank

    me = rank()
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") or 0)
    for f in plan:
        if f.rank != me or (f.attempt is not None and f.attempt != attempt):
            continue
        if f.kind == "slow" and i >= f.step:
            time.sleep(f.seconds or 0.0)
        elif i == f.step and f.kind == "kill":
            log.warning("fault: SIGKILL rank %d at step %d (attempt %d)", me, i, attempt)
            for s in (sys.stdout, sys.stderr):
                s.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        elif i == f.step and f.kind == "raise":
            raise FaultInjected(f"injected fault: rank {me} raised at step {i} (attempt {attempt})")
        elif i == f.step and f.kind == "hang":
            log.warning("fault: rank %d hangs at step %d (attempt %d)", me, i, attempt)
            while True:  # a stuck rank: sleeps forever, visible in a stack dump as this line
                time.sleep(3600)
