"""The two ways a launch fails: a rank broke (``RankError``) or nobody finished in time (``LaunchTimeout``).

Both carry what a student needs to find the bug without re-running: the rank, its remote traceback or stack
dump, the last collective each rank entered, what the other ranks were doing, and their captured
stdout/stderr.
"""

from __future__ import annotations

from typing import Any


class RankError(RuntimeError):
    """The first rank that raised or died (the root cause, not the survivors' "Connection reset" errors).

    Attributes:
        rank: the rank that failed first.
        exitcode: its process exit code (negative = killed by a signal, e.g. -9), or None if it raised and
        exited 1.
        signal_name: e.g. ``"SIGKILL"`` when the rank was killed by a signal, else None.
        exc_type: the remote exception's type name (e.g. ``"ValueError"``), or None if the rank died.
        remote_traceback: the rank's formatted traceback (notebook cells show their file, line and source).
        others: ``{rank: one-line state}`` for every other rank (finished / raised X / killed by the
        launcher).
        stdout, stderr: per-rank captured text (lists indexed by rank).
        trace: the collective trace DataFrame when ``launch(trace=True)``, else None.
    """

    def __init__(
        self,
        message: str,
        *,
        rank: int,
        exitcode: int | None = None,
        signal_name: str | None = None,
        exc_type: str | None = None,
        remote_traceback: str = "",
        others: dict[int, str] | None = None,
        stdout: list[str] | None = None,
        stderr: list[str] | None = None,
        trace: Any = None,
    ) -> None:
        super().__init__(message)
        self.rank = rank
        self.exitcode = exitcode
        self.signal_name = signal_name
        self.exc_type = exc_type
        self.remote_traceback = remote_traceback
        self.others = others or {}
        self.stdout = stdout or []
        self.stderr = stderr or []
        self.trace = trace

    def __reduce__(self) -> tuple:
        return (_rebuild, (type(self), self.args[0], self.__dict__))


class LaunchTimeout(TimeoutError):
    """No rank failed, but not all finished within ``timeout`` seconds (a hang or a mismatched collective).

    Attributes:
        timeout: the launcher's timeout in seconds (this, not the process group's 30-minute one, fired).
        stacks: ``{rank: Python stack dump of all threads}`` taken with faulthandler at the timeout.
        last_collective: ``{rank: {"op", "seq", "shape", "site", "done"} or None}``: the last collective each
            rank entered and whether it returned.
        finished: ranks that had already returned when the timeout fired.
        stdout, stderr, trace: as on RankError (trace holds the records written up to the timeout).
    """

    def __init__(
        self,
        message: str,
        *,
        timeout: float,
        stacks: dict[int, str] | None = None,
        last_collective: dict[int, dict | None] | None = None,
        finished: list[int] | None = None,
        stdout: list[str] | None = None,
        stderr: list[str] | None = None,
        trace: Any = None,
    ) -> None:
        super().__init__(message)
        self.timeout = timeout
        self.stacks = stacks or {}
        self.last_collective = last_collective or {}
        self.finished = finished or []
        self.stdout = stdout or []
        self.stderr = stderr or []
        self.trace = trace

    def __reduce__(self) -> tuple:
        return (_rebuild, (type(self), self.args[0], self.__dict__))


def _rebuild(cls: type, message: str, state: dict) -> BaseException:
    err = cls.__new__(cls)
    BaseException.__init__(err, message)
    err.__dict__.update(state)
    return err
