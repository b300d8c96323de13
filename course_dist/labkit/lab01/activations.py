"""Activations of a transformer block: what autograd saves (a saved-tensor ledger) against the activation
model ``s*b*h*(34 + 5*a*s/h)`` bytes per layer, and what recomputation (``torch.utils.checkpoint``) trades.

- ``TransformerBlock``: pre-LayerNorm attention (``a`` heads, written out: scores, softmax, dropout, values)
  and a 4h GELU MLP, each with a residual dropout: the block the model (Korthikanti et al. 2022, the
  Ultra-Scale Playbook) counts. Attention is written out rather than ``scaled_dot_product_attention`` because
  the fused kernels save other tensors (log-sum-exp instead of the s x s probabilities).
- ``block_ledger``: bytes autograd keeps for backward during one forward, parameters excluded, each storage
  once (views of one storage count once), split into the LayerNorm statistics (two per-token floats per
  LayerNorm, which the model leaves out) and the rest.
- ``recompute_trade``: ``layers`` blocks with and without ``checkpoint`` per block: the ledger (bytes held
  between forward and backward) and the step time, interleaved rounds.
- ``decision_case``: per-rank bytes of a 7 B-class model at s = 4096 from the student's formula and
  ``memory_per_rank``: model states fit after ZeRO-3, activations do not; recomputation or sequence
  parallelism do. Derived from the formula, not measured.

Why the ledger and not RSS: on CPU the allocator's resident size moves with fragmentation and other
processes; the ledger is exactly what backward needs, which is what the formula models.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.checkpoint import checkpoint


class TransformerBlock(nn.Module):
    """Pre-LN block: x + drop(proj(attn(ln1(x)))), then + drop(fc2(gelu(fc1(ln2(x))))); hidden size ``h``."""

    def __init__(self, h: int, a: int, dropout: float = 0.1) -> None:
        super().__init__()
        if h % a:
            raise ValueError(f"hidden size h = {h} is not divisible by the {a} heads")
        self.a, self.p = a, dropout
        self.ln1, self.ln2 = nn.LayerNorm(h), nn.LayerNorm(h)
        self.qkv, self.proj = nn.Linear(h, 3 * h), nn.Linear(h, h)
        self.fc1, self.fc2 = nn.Linear(h, 4 * h), nn.Linear(4 * h, h)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        d = h // self.a
        q, k, v = (t.reshape(b, s, self.a, d).transpose(1, 2) for t in self.qkv(self.ln1(x)).split(h, dim=-1))
        # scale after the product: scaling q first would save a second copy of q (a new storage)
        probs = F.dropout(((q @ k.transpose(-2, -1)) * d**-0.5).softmax(-1), self.p, self.training)
        out = (probs @ v).transpose(1, 2).reshape(b, s, h)
        x = x + F.dropout(self.proj(out), self.p, self.training)
        return x + F.dropout(self.fc2(F.gelu(self.fc1(self.ln2(x)))), self.p, self.training)


def _ledger(module: nn.Module, fn: Callable[[], torch.Tensor]) -> tuple[dict[int, int], torch.Tensor]:
    params = {p.untyped_storage().data_ptr() for p in module.parameters()}
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        st = t.untyped_storage()
        if st.data_ptr() not in params and t.dim() > 0:
            seen[st.data_ptr()] = max(seen.get(st.data_ptr(), 0), st.nbytes())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    return seen, out


def block_ledger(s: int, b: int, h: int, a: int, *, dropout: float = 0.1, seed: int = 0) -> dict[str, int]:
    """One forward of a fp32 ``TransformerBlock`` on CPU: ``saved_bytes`` (everything autograd keeps but the
    parameters), ``layernorm_stats_bytes`` (two fp32 per token per LayerNorm, inside saved_bytes) and
    ``model_bytes`` = saved_bytes - layernorm_stats_bytes, what the activation model counts."""
    for name, v in (("s", s), ("b", b), ("h", h), ("a", a)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    torch.manual_seed(seed)
    block = TransformerBlock(h, a, dropout).train()
    x = torch.randn(b, s, h, requires_grad=True)
    seen, out = _ledger(block, lambda: block(x))
    out.sum().backward()  # the graph is real: it must run backward
    stats = 2 * 2 * s * b * 4  # two LayerNorms, a mean and a reciprocal std per token, fp32
    total = sum(seen.values())
    return {"s": s, "b": b, "h": h, "a": a, "dropout": dropout, "saved_bytes": total,
            "layernorm_stats_bytes": stats, "model_bytes": total - stats}


class _Stack(nn.Module):
    def __init__(self, layers: int, h: int, a: int, dropout: float) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(TransformerBlock(h, a, dropout) for _ in range(layers))

    def forward(self, x: torch.Tensor, recompute: bool) -> torch.Tensor:
        for blk in self.blocks:
            # non-reentrant checkpoint keeps only the block's input and re-runs its forward during backward
            x = checkpoint(blk, x, use_reentrant=False) if recompute else blk(x)
        return x


def recompute_trade(s: int, b: int, h: int, a: int, *, layers: int = 4, rounds: int = 5,
                    dropout: float = 0.0, seed: int = 0) -> dict[str, float | list[float]]:
    """``layers`` blocks, each step forward + backward, with and without per-block recomputation, alternated
    round by round (both see the same machine load). Returns the ledger's held bytes of each, their ratio,
    and the step times (seconds) of every round of each."""
    if rounds < 1 or layers < 1:
        raise ValueError(f"rounds and layers must be >= 1, got rounds={rounds}, layers={layers}")
    torch.manual_seed(seed)
    stack = _Stack(layers, h, a, dropout).train()
    x = torch.randn(b, s, h, requires_grad=True)
    held: dict[bool, int] = {}
    times: dict[bool, list[float]] = {False: [], True: []}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one thread, as each rank of launch: intra-op threads on a shared box add noise
    try:
        for r in range(rounds + 1):  # round 0 warms up (allocator, first-call dispatch) and is not timed
            for recompute in (False, True) if r % 2 else (True, False):
                t0 = time.perf_counter()
                seen, out = _ledger(stack, lambda rc=recompute: stack(x, rc))
                out.sum().backward()
                dt = time.perf_counter() - t0
                held[recompute] = sum(seen.values())
                stack.zero_grad(set_to_none=True)
                x.grad = None
                if r:
                    times[recompute].append(dt)
    finally:
        torch.set_num_threads(threads)
    plain, ckpt = statistics.median(times[False]), statistics.median(times[True])
    return {"layers": layers, "held_bytes": float(held[False]), "held_bytes_recompute": float(held[True]),
            "memory_ratio": held[True] / held[False], "step_s": times[False], "step_s_recompute": times[True],
            "time_ratio_median": ckpt / plain}


def decision_case(block_activation_bytes: Callable[..., int], memory_per_rank: Callable[..., dict],
                  *, budget: float = 80e9, world: int = 8) -> list[dict]:
    """A 7 B-class model (h 4096, 32 heads, 32 layers, s 4096, micro-batch 1, bf16 + 1-byte dropout masks,
    mixed-precision AdamW) on ``world`` ranks, GiB-free bytes per rank from the student's formula and memory
    model, one row per remedy. Derived (the Playbook's accounting), not measured."""
    s, h, a, layers, n = 4096, 4096, 32, 32, 7e9
    per_layer = block_activation_bytes(s, 1, h, a)
    full = layers * per_layer
    # full recomputation keeps each layer's input (2sbh in bf16) and rebuilds one layer at a time in backward
    recompute = layers * 2 * s * h + per_layer
    rows = []
    for label, kw, act in (
        ("ZeRO-3, no recomputation", {"zero": 3}, full),
        ("ZeRO-3 + full recomputation", {"zero": 3}, recompute),
        (f"TP {world} + sequence parallel, no recomputation", {"tp": world}, full),
    ):
        m = memory_per_rank(int(n), world=world, act_bytes=float(act), **kw)
        states = m["params"] + m["grads"] + m["optimizer"]
        rows.append({"configuration": label, "model states (GB)": states / 1e9,
                     "activations (GB)": m["activations"] / 1e9, "total (GB)": m["total"] / 1e9,
                     "fits 80 GB": bool(m["total"] <= budget)})
    return rows
