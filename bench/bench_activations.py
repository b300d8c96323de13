"""Activations of a transformer block: the activation model against a saved-tensor ledger, and what
recomputation trades. ``python -m bench activations`` (``--quick``: fewer rounds, smaller shapes).

- **Formula vs ledger** (deterministic: the ledger counts bytes, it does not time anything): lab 01's
  ``TransformerBlock`` (fp32, CPU) through ``block_ledger``, against the Playbook's ``s*b*h*(34 + 5*a*s/h)``
  generalized to value and mask sizes, ``s*b*h*(16*v + 2*m) + a*s*s*b*(2*v + m)`` (with dropout) and
  ``s*b*h*16*v + a*s*s*b*v`` (without). The Playbook's own numbers assume v = 2 (16-bit) and m = 1 (a bool
  mask); on this CPU the values are fp32 (v = 4) and torch's CPU dropout saves a float32 mask (m = 4).
- **Recomputation** (timed): ``layers`` blocks with and without ``torch.utils.checkpoint`` per block,
  alternated round by round; bytes held between forward and backward (the ledger) and the step-time ratio
  per round (min / median / max), with the load average. CPU fp32 figures, not GPU ones.
"""

from __future__ import annotations

import os
import statistics
import time

from bench import machine, spread, verdict, write
from bench.mdtable import md_table


def formula(s: int, b: int, h: int, a: int, *, v: int, m: int, dropout: bool) -> int:
    """The activation model at value size ``v`` and mask size ``m`` (bytes per layer)."""
    if not dropout:
        return s * b * h * 16 * v + a * s * s * b * v
    return s * b * h * (16 * v + 2 * m) + a * s * s * b * (2 * v + m)


def main(quick: bool = False) -> None:
    import pandas as pd

    from course_dist.labkit.lab01 import block_ledger, recompute_trade

    t0, load0 = time.monotonic(), os.getloadavg()[0]
    shapes = [(128, 2, 64, 4), (256, 1, 128, 8)] + ([] if quick else [(512, 2, 128, 4)])
    rows = []
    for s, b, h, a in shapes:
        for dropout in (0.1, 0.0):
            led = block_ledger(s, b, h, a, dropout=dropout)
            cpu = formula(s, b, h, a, v=4, m=4, dropout=dropout > 0)
            playbook16 = formula(s, b, h, a, v=2, m=1, dropout=True)
            rows.append({"s, b, h, a": f"{s}, {b}, {h}, {a}", "dropout": dropout,
                         "ledger (MB)": led["saved_bytes"] / 1e6,
                         "formula fp32, 4-byte mask (MB)": cpu / 1e6,
                         "ledger / formula": led["saved_bytes"] / cpu,
                         "ledger without LayerNorm stats / formula": led["model_bytes"] / cpu,
                         "ledger / (2 x Playbook 16-bit)": led["saved_bytes"] / (2 * playbook16)})
    worst = max(abs(r["ledger / formula"] - 1) for r in rows)
    for r in rows:  # ratios near 1 need more than md_table's 3 significant digits
        for k in [k for k in r if k.startswith("ledger ")]:
            r[k] = f"{r[k]:.4f}"

    rounds = 3 if quick else 9
    trade_rows, trades = [], []
    for s, h, a in ([(128, 64, 4)] if quick else [(128, 64, 4), (256, 64, 4), (256, 128, 8)]):
        tr = recompute_trade(s, 2, h, a, layers=4, rounds=rounds)
        per_round = [c / p for p, c in zip(tr["step_s"], tr["step_s_recompute"], strict=True)]
        trades.append(per_round)
        trade_rows.append({"s, b, h, a (4 layers)": f"{s}, 2, {h}, {a}",
                           "held plain (MB)": tr["held_bytes"] / 1e6,
                           "held recompute (MB)": tr["held_bytes_recompute"] / 1e6,
                           "memory ratio": f"{tr['memory_ratio']:.4f}",
                           "step ms plain (min/med/max)": spread([1e3 * t for t in tr["step_s"]], "{:.1f}"),
                           "step ms recompute (min/med/max)":
                               spread([1e3 * t for t in tr["step_s_recompute"]], "{:.1f}"),
                           "time ratio per round (min/med/max)": spread(per_round, "{:.2f}")})
    med = statistics.median(statistics.median(r) for r in trades)
    load1 = os.getloadavg()[0]
    text = (
        "# Activations of a transformer block: the formula, the ledger, recomputation (CPU, fp32)\n\n"
        f"Measured {machine()} (load {load0:.1f} at the start, {load1:.1f} at the end); "
        f"{time.monotonic() - t0:.0f} s in all.\n\n"
        "## The activation model against a saved-tensor ledger\n\n"
        "Bytes autograd keeps for backward in one forward of one block (parameters excluded, each storage "
        "once), against `s*b*h*(16*v + 2*m) + a*s*s*b*(2*v + m)` with v = 4 (fp32 values) and m = 4 (torch's "
        "CPU dropout multiplies by a float32 mask); without dropout `s*b*h*16*v + a*s*s*b*v`. The Playbook's "
        "`s*b*h*(34 + 5*a*s/h)` is v = 2, m = 1 (16-bit values, bool masks): twice it is not the fp32 CPU "
        "figure, because the masks do not double (and without dropout there are none). Counting, not timing: "
        "one value per shape.\n\n"
        f"{md_table(pd.DataFrame(rows), index=False)}\n\n"
        f"Largest |ledger / formula - 1|: {worst:.4f} (the two per-token fp32 LayerNorm statistics the "
        f"formula leaves out; without them the ratio is exactly 1): {verdict(worst, 0.01)} against a 1 % "
        "target.\n\n"
        "## Recomputation: memory held vs step time\n\n"
        f"Four blocks, no dropout, with and without `torch.utils.checkpoint(use_reentrant=False)` per block, "
        f"alternated over {rounds} rounds after one warm-up round; held bytes from the ledger (recomputation "
        "keeps each block's input only; in backward one block's activations are rebuilt at a time, not "
        "counted here). Time ratio = recompute / plain step, per round.\n\n"
        f"{md_table(pd.DataFrame(trade_rows), index=False)}\n\n"
        f"Median time ratio {med:.2f}: {verdict(med, 1.5)} against 1.5 (one extra forward of a step whose "
        "backward costs about two forwards is ~1.33; on small CPU shapes per-op overheads and checkpoint's "
        "bookkeeping add to it). CPU fp32 on a shared 2-core box, not a GPU figure.\n"
    )
    print(write("activations", text))


if __name__ == "__main__":
    main()
