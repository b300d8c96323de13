"""Lab 01's model, its data, and the two memory ledgers the exercises are checked against.

- ``LabMLP``: ``layers`` blocks of Linear(d, h) -> ReLU -> Linear(h, d), then a classifier head. Small enough
  to train on 2 CPU cores, shaped like a transformer's MLP so the tensor-parallel split is the Megatron one.
- ``live_state_bytes``: parameter / gradient / optimizer-state bytes counted from the live tensors after a
  real optimizer step (what ``memory_per_rank`` must reproduce exactly).
- ``saved_activation_bytes``: a saved-tensor ledger (``torch.autograd.graph.saved_tensors_hooks``): the bytes
  autograd keeps for backward, parameters excluded, each storage counted once. On a GPU this is what
  ``torch.cuda.max_memory_allocated`` grows by during forward; on CPU it is the honest measurement.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from course_dist.seed import pick


@dataclass(frozen=True)
class ModelConfig:
    """Shape of the lab model: input/residual width ``d_model``, MLP width ``d_hidden``, ``layers`` blocks."""

    d_model: int = 256
    d_hidden: int = 1024
    layers: int = 4
    classes: int = 10

    def __post_init__(self) -> None:
        for name in ("d_model", "d_hidden", "layers", "classes"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"ModelConfig.{name} must be a positive int, got {v!r}")


def model_config() -> ModelConfig:
    """The lab model: 2.1 M parameters in full mode, 0.5 M in fast mode (what the grader runs)."""
    return pick(full=ModelConfig(256, 1024, 4, 10), fast=ModelConfig(128, 512, 4, 10))


class Block(nn.Module):
    """Linear(d, h) -> ReLU -> Linear(h, d): the column -> row pair of exercise 3."""

    def __init__(self, d_model: int, d_hidden: int) -> None:
        super().__init__()
        self.up = nn.Linear(d_model, d_hidden)
        self.down = nn.Linear(d_hidden, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.relu(self.up(x)))


class LabMLP(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.blocks = nn.ModuleList(Block(cfg.d_model, cfg.d_hidden) for _ in range(cfg.layers))
        self.head = nn.Linear(cfg.d_model, cfg.classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for b in self.blocks:
            x = b(x)
        return self.head(x)


def build_model(cfg: ModelConfig | None = None, seed: int = 0) -> LabMLP:
    torch.manual_seed(seed)
    return LabMLP(cfg or model_config())


def make_data(n: int, cfg: ModelConfig | None = None, seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` samples labelled by a fixed random teacher (learnable, so a target loss is reachable)."""
    cfg = cfg or model_config()
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, cfg.d_model, generator=g)
    teacher = torch.randn(cfg.d_model, cfg.classes, generator=torch.Generator().manual_seed(1234))
    return x, (x @ teacher).argmax(dim=1)


def n_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def live_state_bytes(model: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, int]:
    """Bytes of parameters, gradients and optimizer state, counted from the live tensors.

    Optimizer state counts the per-element moments (Adam's ``exp_avg``/``exp_avg_sq``); the scalar ``step``
    counters (one 0-d tensor per parameter tensor) are left out, as in the ZeRO paper's K.
    """
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    grads = sum(p.grad.numel() * p.grad.element_size() for p in model.parameters() if p.grad is not None)
    optim = 0
    for state in optimizer.state.values():
        for v in state.values():
            if torch.is_tensor(v) and v.dim() > 0:
                optim += v.numel() * v.element_size()
    return {"params": params, "grads": grads, "optimizer": optim}


def measure_state(cfg: ModelConfig | None = None, batch: int = 32) -> dict[str, int]:
    """One real AdamW step on the lab model; the live bytes afterwards (fp32 everything)."""
    cfg = cfg or model_config()
    model = build_model(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = make_data(batch, cfg)
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
    return {"n_params": n_params(model), **live_state_bytes(model, opt)}


def saved_activation_bytes(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> int:
    """Bytes autograd saves for backward during ``cross_entropy(model(x), y)``: parameters excluded (also as
    views, e.g. the transposed weight of a Linear), integer targets excluded, each storage counted once."""
    param_storages = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        s = t.untyped_storage()
        if s.data_ptr() not in param_storages and t.is_floating_point() and t.dim() > 0:
            seen[s.data_ptr()] = max(seen.get(s.data_ptr(), 0), s.nbytes())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = nn.functional.cross_entropy(model(x), y)
    del loss
    return sum(seen.values())


def measure_activations(batches: list[int], cfg: ModelConfig | None = None) -> list[dict]:
    """Saved-activation bytes of the lab model for each batch size (one forward each)."""
    cfg = cfg or model_config()
    model = build_model(cfg)
    out = []
    for b in batches:
        x, y = make_data(b, cfg)
        out.append({"batch": b, "saved_bytes": saved_activation_bytes(model, x, y)})
    return out
