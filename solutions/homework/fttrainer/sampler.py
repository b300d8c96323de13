"""Elastic sampling: the global sample stream of an epoch is consumed exactly once across restarts and
resizes.

Why not ``torch.utils.data.DistributedSampler``? Its position is implicit (an iterator) and its split depends
on the world size, so after a restart it replays the epoch from the beginning, and after a resize the ranks'
shares no longer line up. Here the *position* is global - samples of this epoch already consumed, always a
multiple of the fixed global batch - so it means the same thing at any world size:

    epoch order  = randperm(size, seed + epoch)          (same on every rank; set_epoch changes it)
    global step  = order[consumed : consumed + global_batch]
    rank r gets  = its contiguous 1/world share, cut into ``accum`` micro-batches

    sampler = ElasticSampler(size=1024, global_batch=64, micro_batch=16, world_size=2, rank=0)
    sampler.set_epoch(0)
    for micro_batches in sampler: ...        # 2 micro-batches of 16 per step on this rank
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch


def grad_accum_steps(global_batch: int, micro_batch: int, world_size: int) -> int:
    """Micro-batches per rank per step so that ``micro_batch x accum x world_size == global_batch``.

    The global batch is part of the optimisation problem (LR, noise scale): it must not change silently when
    the job is restarted on another number of ranks, so a global batch that does not divide is an error.
    """
    if global_batch <= 0 or micro_batch <= 0 or world_size <= 0:
        raise ValueError(f"need positive sizes, got {global_batch=}, {micro_batch=}, {world_size=}")
    per_step = micro_batch * world_size
    if global_batch % per_step:
        raise ValueError(
            f"global_batch={global_batch} is not divisible by micro_batch x world_size = {micro_batch} x "
            f"{world_size} = {per_step}; choose a global batch that is a multiple of {per_step} or another "
            f"micro_batch (the global batch never changes silently)"
        )
    return global_batch // per_step


class ElasticSampler:
    """Per-rank micro-batches of one epoch's global stream, resumable from a global position."""

    def __init__(
        self, size: int, global_batch: int, micro_batch: int, world_size: int, rank: int, seed: int = 0
    ) -> None:
        self.accum = grad_accum_steps(global_batch, micro_batch, world_size)
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} outside [0, {world_size})")
        if size < global_batch:
            raise ValueError(f"dataset of {size} samples is smaller than one global batch ({global_batch})")
        self.size, self.global_batch, self.micro_batch = size, global_batch, micro_batch
        self.world_size, self.rank, self.seed = world_size, rank, seed
        self.epoch = 0
        self.consumed = 0  # samples of this epoch already handed out, summed over all ranks

    @property
    def steps_per_epoch(self) -> int:
        return self.size // self.global_batch

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch's shuffle; moving to another epoch starts it at its beginning."""
        if epoch != self.epoch:
            self.consumed = 0
        self.epoch = epoch

    def epoch_order(self) -> torch.Tensor:
        """The epoch's global order: identical on every rank and at every world size."""
        g = torch.Generator().manual_seed(self.seed + self.epoch)
        return torch.randperm(self.size, generator=g)

    def __len__(self) -> int:
        """Steps left in this epoch."""
        return self.steps_per_epoch - self.consumed // self.global_batch

    def __iter__(self) -> Iterator[list[list[int]]]:
        """For each remaining global step of the epoch: this rank's ``accum`` micro-batches (lists of sample
        indices). ``consumed`` grows by one global batch as each step is handed out."""
        order = self.epoch_order()
        per_rank = self.global_batch // self.world_size
        while self.consumed + self.global_batch <= self.steps_per_epoch * self.global_batch:
            step = order[self.consumed : self.consumed + self.global_batch]
            mine = step[self.rank * per_rank : (self.rank + 1) * per_rank].tolist()
            # Counted when handed out: a checkpoint is only taken after the step finished, so it never skips
            # a step it did not train on, and never replays one it did.
            self.consumed += self.global_batch
            yield [mine[i * self.micro_batch : (i + 1) * self.micro_batch] for i in range(self.accum)]

    def state_dict(self) -> dict[str, Any]:
        """The global position: ``{"epoch", "consumed", "size", "global_batch", "seed"}``."""
        return {
            "epoch": self.epoch,
            "consumed": self.consumed,
            "size": self.size,
            "global_batch": self.global_batch,
            "seed": self.seed,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume at a global position; valid at any world size, but only for the same data and global
        batch."""
        for key in ("size", "global_batch", "seed"):
            if state[key] != getattr(self, key):
                raise ValueError(
                    f"cannot resume the sample stream: checkpoint has {key}={state[key]}, this run has "
                    f"{getattr(self, key)} (exactly-once needs the same dataset size, global batch and seed)"
                )
        if state["consumed"] % self.global_batch:
            raise ValueError(f"position {state['consumed']} is not a multiple of the global batch")
        self.epoch = int(state["epoch"])
        self.consumed = int(state["consumed"])
