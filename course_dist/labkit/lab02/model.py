"""Lab 02 model and data: the MLP every test trains, its synthetic task, fingerprints and state comparisons.

Nothing here solves an exercise. Single process (a notebook cell)::

    from course_dist.labkit import lab02
    model = lab02.LabNet(lab02.model_config())       # the lab's model (size from COURSE_FAST)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import torch
from torch import nn

MB = 1 << 20


@dataclass(frozen=True)
class ModelConfig:
    """Size of the lab's MLP (fp32).

    Attributes:
        d_in: input features; also the width of the frozen input projection (d_in x d_in,
            requires_grad=False).
        width: hidden width of every trainable block; the parameter count grows as depth * width**2.
        depth: number of hidden Linear+ReLU blocks after the input block.
        classes: output classes of the head (and of the auxiliary head, used only when asked).
        norm: put a BatchNorm1d after the input block (its running statistics are buffers that change every
            forward: what DDP's ``broadcast_buffers=True`` keeps equal across ranks).
    """

    d_in: int = 64
    width: int = 512
    depth: int = 6
    classes: int = 10
    norm: bool = False

    def __post_init__(self) -> None:
        for name in ("d_in", "width", "depth", "classes"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"ModelConfig.{name} must be a positive int, got {v!r}")


def model_config(size: str = "lab") -> ModelConfig:
    """``"lab"``: the measured model (1.6 M params full, 0.2 M fast); ``"tiny"``: the one the tests train;
    ``"tiny_bn"``: tiny with a BatchNorm (buffers that change every step)."""
    from course_dist import pick

    if size == "tiny":
        return ModelConfig(d_in=16, width=32, depth=2, classes=4)
    if size == "tiny_bn":
        return ModelConfig(d_in=16, width=32, depth=2, classes=4, norm=True)
    if size == "lab":
        return ModelConfig(width=pick(full=512, fast=192), depth=pick(full=6, fast=4))
    raise ValueError(f"size must be 'lab', 'tiny' or 'tiny_bn', got {size!r}")


class LabNet(nn.Module):
    """An MLP with everything DDP has to respect: a buffer, a frozen parameter and an optionally unused head.

    - ``scale`` (buffer): a random per-feature input scale. Not a parameter, so a broadcast of parameters
      alone leaves replicas different.
    - ``frozen`` (Linear, requires_grad=False): a "pretrained" projection; no gradient, never all-reduced.
    - ``aux`` (Linear): an auxiliary head used only when ``forward(x, use_aux=True)``; otherwise its
      parameters get no gradient at all (``.grad is None``) - an *unused parameter* in DDP's sense.
    - with ``cfg.norm``: a BatchNorm1d whose running mean/var are updated from each rank's own batch.
    """

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.register_buffer("scale", torch.rand(cfg.d_in) + 0.5)
        self.frozen = nn.Linear(cfg.d_in, cfg.d_in)
        self.frozen.requires_grad_(False)
        layers: list[nn.Module] = [nn.Linear(cfg.d_in, cfg.width)]
        if cfg.norm:
            layers.append(nn.BatchNorm1d(cfg.width))
        layers.append(nn.ReLU())
        for _ in range(cfg.depth):
            layers += [nn.Linear(cfg.width, cfg.width), nn.ReLU()]
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(cfg.width, cfg.classes)
        self.aux = nn.Linear(cfg.width, cfg.classes)

    def forward(self, x: torch.Tensor, use_aux: bool = False) -> torch.Tensor:
        h = self.body(self.frozen(x * self.scale))
        out = self.head(h)
        return out + self.aux(h) if use_aux else out


def make_model(cfg: ModelConfig, seed: int) -> LabNet:
    """A LabNet initialised from ``seed`` on ``course_dist.device()`` (cpu under gloo, cuda:<local rank> under
    NCCL)."""
    from course_dist import device

    torch.manual_seed(seed)
    return LabNet(cfg).to(device())


def make_data(n: int, cfg: ModelConfig, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` samples of a synthetic classification task (a fixed random teacher labels Gaussian inputs)."""
    # one fixed teacher (the task), samples drawn from ``seed`` (train, eval and per-step batches differ)
    teacher = torch.randn(cfg.d_in, cfg.classes, generator=torch.Generator().manual_seed(12345))
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, cfg.d_in, generator=g)
    y = (x @ teacher + 0.5 * torch.randn(n, cfg.classes, generator=g)).argmax(dim=1)
    return x, y


def global_batch(step: int, n: int, cfg: ModelConfig, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """The global batch of ``step`` (same on every rank). Rank r trains on rows ``[r*B:(r+1)*B]`` of it."""
    return make_data(n, cfg, seed=1000 * seed + step)


def trainable_sizes(size: str = "tiny") -> list[int]:
    """Bytes of each trainable parameter of the model, in registration order (what bucketing works on)."""
    torch.manual_seed(0)
    return [p.numel() * p.element_size() for p in LabNet(model_config(size)).parameters() if p.requires_grad]


# ---- fingerprints and comparisons ----
def fingerprint(tensors: Iterable[torch.Tensor]) -> torch.Tensor:
    """Three float64 numbers that change when any element of any tensor changes: (sum, sum of squares, sum of
    x_i * sin(i + 1)). The last one catches permutations that the first two miss. Returned on the tensors'
    device."""
    flat = [t.detach().reshape(-1).to(torch.float64) for t in tensors]
    if not flat:
        return torch.zeros(3, dtype=torch.float64)
    x = torch.cat(flat)
    w = torch.sin(torch.arange(1, x.numel() + 1, dtype=torch.float64, device=x.device))
    return torch.stack([x.sum(), (x * x).sum(), (x * w).sum()])


def state_fingerprint(model: nn.Module) -> dict[str, list[float]]:
    """Fingerprints of the parameters and of the buffers as plain floats (what a rank returns)."""
    return {
        "params": fingerprint(model.parameters()).tolist(),
        "buffers": fingerprint(model.buffers()).tolist(),
    }


def max_abs_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    """Largest |a - b| over the floating tensors both state dicts hold (0.0 when they share none)."""
    keys = [k for k in a if k in b and isinstance(a[k], torch.Tensor) and a[k].is_floating_point()]
    diffs = [float((a[k].double() - b[k].double()).abs().max()) for k in keys if a[k].numel()]
    return max(diffs, default=0.0)


def worst_tensor(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> str:
    """``"<name>: got [...], want [...]"`` for the tensor with the largest |a - b| (what an assert prints)."""
    keys = [k for k in a if k in b and isinstance(a[k], torch.Tensor) and a[k].is_floating_point()
            and a[k].numel()]
    if not keys:
        return "no common floating tensors"
    k = max(keys, key=lambda k: float((a[k].double() - b[k].double()).abs().max()))
    return f"{k}: got {a[k].reshape(-1)[:3].tolist()}..., want {b[k].reshape(-1)[:3].tolist()}..."



class ContractViolation(AssertionError):
    """Replicas that must be identical are not. ``.name`` says what was compared, ``.ranks`` which ranks
    differ from rank 0 (the source of truth, as in DDP's broadcast from rank 0)."""

    def __init__(self, name: str, ranks: list[int], detail: str = "") -> None:
        super().__init__(f"{name} diverged on rank(s) {ranks} (compared with rank 0). {detail}".strip())
        self.name = name
        self.ranks = ranks
