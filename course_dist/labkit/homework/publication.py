"""Lab 04's publication rules applied to the homework package's ``save_checkpoint`` (item *atomic*).

A save can survive a SIGKILL and still lose a checkpoint to a power cut: ``os.replace`` is atomic, but a file
renamed before it was fsynced may come back empty, and a rename whose directory was never fsynced may come
back undone. :func:`publication_problems` records the file operations of one world-1 save in a forked child
(:mod:`course_dist.labkit.lab04.recorder`) and lists every broken rule, judged by lab 04's
:func:`~course_dist.labkit.lab04.drills.protocol_problems`:

- every file in the staging folder fsynced after its last write and before the rename that publishes it;
- the manifest written last; the staging folder fsynced before the rename, the checkpoint root after it;
- ``latest`` moved into place with ``os.replace`` after the checkpoint it names is published.

The package's own helpers (``_write_durable``, ``_fsync_file``, ``_fsync_dir``) already follow them; the save
must call them at the right moments. The rules are per writer, so one process suffices (the world-2 two-phase
facts are :func:`~course_dist.labkit.homework.drills.two_phase_check`'s).
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import torch

from course_dist.labkit.lab04.drills import protocol_problems
from course_dist.labkit.lab04.recorder import namespaces_of, run_in_child


def _state(step: int) -> tuple[dict, dict]:
    return {"step": step, "w": torch.arange(4.0) * step}, {"step": step, "rng": torch.full((3,), float(step))}


def publication_problems(pkg: ModuleType, root: str | Path, step: int = 2, keep_last: int = 2) -> list[str]:
    """Broken publication rules of ``pkg.save_checkpoint(root, step, ...)`` at world 1 (empty: none).

    Steps ``1 .. step-1`` are saved first without recording (so the recorded save also prunes when
    ``keep_last < step``); the recorded save runs in a forked child with a 60 s limit.
    """
    if step < 2:
        raise ValueError(f"step must be >= 2 (one earlier checkpoint to publish over), got {step}")
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    save = pkg.save_checkpoint
    for s in range(1, step):
        save(root, s, *_state(s), 0, 1, keep_last=keep_last)
    res = run_in_child(
        lambda: save(root, step, *_state(step), 0, 1, keep_last=keep_last),
        root,
        namespaces=namespaces_of(save),
    )
    if res.exitcode != 0:
        raise RuntimeError(
            f"save_checkpoint(root, {step}, ..., rank=0, world_size=1) failed in the recorded child "
            f"(exit {res.exitcode}, signal {res.signal}):\n{res.error}"
        )
    return protocol_problems(res.records, step)
