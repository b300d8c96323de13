"""Finding and killing everything a submission started, however it tried to escape.

A grading kernel is started by jupyter_client in a *new session* (``start_new_session=True``), ranks may be
forked or spawned under it, and a student's code may double-fork. So we mark the submission's worker with an
environment token (inherited by the kernel, every rank and every grandchild) and kill by two criteria: the
worker's descendants (psutil) and any process carrying the token.
"""

from __future__ import annotations

import os
import signal

import psutil

TOKEN_VAR = "COURSE_GRADE_TOKEN"


def processes_with_token(token: str) -> list[psutil.Process]:
    found = []
    me = os.getpid()
    for p in psutil.process_iter(["pid"]):
        if p.pid == me:
            continue
        try:
            if p.environ().get(TOKEN_VAR) == token:
                found.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
            continue
    return found


def kill_tree(root_pid: int | None, token: str | None, *, rounds: int = 3) -> int:
    """SIGKILL ``root_pid``, its descendants and every process carrying ``token``; returns how many were
    killed."""
    killed: set[int] = set()
    for _ in range(rounds):  # repeat: a dying parent may have forked one more child meanwhile
        victims: dict[int, psutil.Process] = {}
        if root_pid is not None:
            try:
                root = psutil.Process(root_pid)
                victims[root.pid] = root
                for ch in root.children(recursive=True):
                    victims[ch.pid] = ch
            except psutil.NoSuchProcess:
                pass
        if token:
            for p in processes_with_token(token):
                victims[p.pid] = p
        victims.pop(os.getpid(), None)
        if not victims:
            break
        for p in victims.values():
            try:
                p.send_signal(signal.SIGKILL)
                killed.add(p.pid)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
        psutil.wait_procs(list(victims.values()), timeout=5)
    return len(killed - {root_pid})


def die_with_parent() -> None:
    """SIGKILL this process when the process that started it dies (Linux ``PR_SET_PDEATHSIG``; strictly, when
    the starting *thread* exits: start it from a thread that waits for it). A grader stopped by SIGKILL or a
    lone SIGTERM then leaves no worker or check running on for nobody; their kernels follow (ipykernel polls
    its parent, the sandbox dies with its parent)."""
    import ctypes

    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent died before the prctl took effect
        os._exit(1)
