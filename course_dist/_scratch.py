"""Temporary folders that leave nothing behind: made with ``mkdtemp``, removed when the caller is done
(:func:`remove`) or, at the latest, when the interpreter that made them exits.

- :func:`tmp_dir` - a fresh folder for results a caller reads later (flight-recorder dumps, a hang tool's
  records): it stays while the notebook's kernel lives and goes when the kernel exits;
- :func:`child_tmp` - a fresh folder set as ``TMPDIR`` in a child's environment, so what the child's tree
  writes to the temp dir (torchrun's ``torchelastic_*`` folder, left behind when the agent is SIGKILLed)
  lands there and goes with :func:`remove` once the tree is reaped.

The exit hook runs only in the process that made the folder: a forked or forkserver child inherits the
registry, never removes its parent's folders. (Not to be confused with ``course_dist.scratch_dir()``, the
folder a notebook shares with the student process.)
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

_OWNED: dict[str, int] = {}  # path -> pid of the process that made it


def _cleanup() -> None:
    me = os.getpid()
    for path, pid in list(_OWNED.items()):
        if pid == me:
            shutil.rmtree(path, ignore_errors=True)
            _OWNED.pop(path, None)


atexit.register(_cleanup)


def tmp_dir(prefix: str, dir: str | None = None) -> str:  # noqa: A002 - tempfile's own name
    """``tempfile.mkdtemp(prefix=prefix, dir=dir)``, removed at this interpreter's exit at the latest."""
    path = tempfile.mkdtemp(prefix=prefix, dir=dir)
    _OWNED[path] = os.getpid()
    return path


def remove(path: str | os.PathLike | None) -> None:
    """Remove a folder the caller is done with (``None`` or an absent folder: nothing to do)."""
    if path is None:
        return
    _OWNED.pop(os.fspath(path), None)
    shutil.rmtree(path, ignore_errors=True)


def child_tmp(env: dict[str, str], prefix: str = "course_tmp_") -> str:
    """A fresh :func:`tmp_dir` set as ``env["TMPDIR"]`` (what ``tempfile`` in the child's tree uses)."""
    path = tmp_dir(prefix)
    env["TMPDIR"] = path
    return path
