"""A deterministic synthetic dataset with a data contract (version, owner, event time, availability window).

The metadata travels into every checkpoint and the metrics log; :func:`check_dataset` refuses to resume a run
on a dataset whose version or contents differ from the ones the checkpoint was trained on - silently
continuing on other data is the bug this prevents.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import torch

log = logging.getLogger(__name__)


class DatasetMismatchError(ValueError):
    """Resuming on a dataset that is not the one the checkpoint was trained on."""


@dataclass(frozen=True)
class DatasetMeta:
    """What a consumer needs to know about the data it trains on (the data contract)."""

    name: str
    """Dataset name."""
    version: str
    """Version label; bump it whenever the contents change."""
    owner: str
    """Who to ask about the data."""
    event_time: str
    """ISO-8601 time the data describes (UTC)."""
    available_from: str
    """Start of the availability window (ISO-8601, UTC): do not train on it before."""
    available_until: str
    """End of the availability window (ISO-8601, UTC): retention ends, do not train on it after."""
    size: int
    """Number of samples."""
    fingerprint: str
    """sha256 prefix of the contents: two datasets with one version label but other contents differ here."""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class SyntheticDataset:
    """``size`` Gaussian inputs labelled by a fixed random teacher network; identical on every rank and every
    run.

    The whole tensor is generated once from ``seed`` (16384 x 256 floats = 16 MiB), so indexing is a gather.
    """

    def __init__(self, size: int, in_dim: int, classes: int, seed: int, version: str, owner: str) -> None:
        if size <= 0 or in_dim <= 0 or classes <= 1:
            raise ValueError(f"need size > 0, in_dim > 0, classes > 1; got {size=}, {in_dim=}, {classes=}")
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(size, in_dim, generator=g)
        teacher = torch.randn(in_dim, classes, generator=g) / in_dim**0.5
        noise = 0.5 * torch.randn(size, classes, generator=g)
        self.y = (self.x @ teacher + noise).argmax(dim=1)
        digest = hashlib.sha256(self.x.numpy().tobytes() + self.y.numpy().tobytes()).hexdigest()[:16]
        event = datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(days=seed % 365)
        self.meta = DatasetMeta(
            name="synthetic-teacher",
            version=version,
            owner=owner,
            event_time=event.isoformat(),
            available_from=event.isoformat(),
            available_until=(event + timedelta(days=3650)).isoformat(),
            size=size,
            fingerprint=digest,
        )

    def __len__(self) -> int:
        return len(self.y)

    def batch(self, indices: list[int] | torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        idx = torch.as_tensor(indices, dtype=torch.long)
        return self.x[idx], self.y[idx]


def check_dataset(saved: dict[str, Any], current: DatasetMeta) -> None:
    """Raise :class:`DatasetMismatchError` unless ``saved`` (a checkpoint's metadata) describes ``current``.

    Version labels must be equal, and so must the fingerprints (same label, other contents is also refused).
    """
    if saved.get("version") != current.version:
        raise DatasetMismatchError(
            f"dataset version mismatch: the checkpoint was trained on version "
            f"{saved.get('version')!r} "
            f"(fingerprint {saved.get('fingerprint')}), the current dataset is version "
            f"{current.version!r} "
            f"(fingerprint {current.fingerprint}). Resume with --data-version {saved.get('version')} "
            f"or start "
            f"a fresh run in another --run-dir."
        )
    if saved.get("fingerprint") != current.fingerprint:
        raise DatasetMismatchError(
            f"dataset contents changed under version {current.version!r}: checkpoint fingerprint "
            f"{saved.get('fingerprint')}, current {current.fingerprint} (same label, other data - check "
            f"--data-seed / --data-size, and bump --data-version when data changes)."
        )
    now = datetime.now(timezone.utc).isoformat()
    if not (current.available_from <= now <= current.available_until):
        log.warning(
            "training outside the dataset's availability window [%s, %s]",
            current.available_from,
            current.available_until,
        )
