"""Exercise 3's drills: world-size changes (never a solution).

- :func:`stream_drill` checks a sampler against the one rule elastic resume needs: after ``consumed``
  samples the epoch's global stream continues exactly (same global batches, every sample once, shares within
  one, the same number of batches on every rank), whatever the world size.
- :func:`elastic_drill` trains at world 2, saves with the simple checkpointer, resumes at world 1 and 3 with
  the student's sampler and compares the sample stream and the loss with the uninterrupted run.
- :func:`random_combos` draws hidden variants from a ``random.Random`` (the grading seed).
"""

from __future__ import annotations

import math
import random
import tempfile
from collections import Counter
from dataclasses import dataclass, field

import pandas as pd

import course_dist

from .simple import _train_part
from .trainer import BatchFn, Config, epoch_order

# (n, batch_size, world_size, consumed, epoch, seed): remainders, uneven splits, empty ranks, mid-batch
# positions
# one of each class the hidden variants draw from: a remainder batch, an uneven split, a world larger than the
# batch (empty shares), a mid-batch position, world 1, nothing consumed, everything but one sample consumed
VISIBLE_COMBOS = [(100, 10, 3, 30, 0, 0), (96, 12, 2, 36, 1, 0), (100, 10, 1, 0, 0, 0), (10, 4, 3, 7, 2, 5),
                  (7, 3, 5, 1, 3, 7), (1, 1, 2, 0, 0, 7), (50, 8, 4, 49, 0, 7)]
HIDDEN_COMBOS = [
    (n, b, w, c, e, 7)
    for n in (1, 7, 50, 97)
    for b in (1, 3, 8)
    for w in (1, 2, 3, 4, 5)
    for c in sorted({0, 1, n // 3, n - 1})
    for e in (0, 3)
    if b <= n and c < n
]


def stream_drill(batches: BatchFn, combos: list[tuple] = VISIBLE_COMBOS) -> pd.DataFrame:
    """One row per combination that breaks the rule (empty = the sampler is elastic)."""
    rows = []
    for n, b, w, c, e, seed in combos:
        order = epoch_order(n, seed, e)[c:]
        want = [order[i : i + b] for i in range(0, len(order), b)]
        per_rank = [batches(n, w, r, seed=seed, epoch=e, consumed=c, batch_size=b) for r in range(w)]
        problem = ""
        lens = {len(p) for p in per_rank}
        if lens != {len(want)}:
            problem = (
                f"ranks have {sorted(lens)} batches, the rest of the epoch is {len(want)} global batches"
            )
        else:
            for j, glob in enumerate(want):
                got = [list(map(int, p[j])) for p in per_rank]
                union = Counter(i for g in got for i in g)
                if union != Counter(glob):
                    lost = sorted(set(glob) - set(union))[:5]
                    extra = sorted((set(union) - set(glob)) | {i for i, k in union.items() if k > 1})[:5]
                    problem = f"global batch {j}: lost {lost}, extra or repeated {extra}"
                    break
                sizes = [len(g) for g in got]
                if max(sizes) - min(sizes) > 1:
                    problem = f"global batch {j} split unevenly: {sizes} samples per rank"
                    break
        if problem:
            rows.append({"n": n, "batch": b, "world": w, "consumed": c, "epoch": e, "problem": problem})
    return pd.DataFrame(rows, columns=["n", "batch", "world", "consumed", "epoch", "problem"])


ELASTIC_CFG = Config(n_samples=100, batch_size=10, total_steps=10, stateless_rng=True)
ELASTIC_TOL = (
    0.10  # relative eval-loss tolerance after a world-size change (dropout masks differ per rank split)
)


@dataclass
class ElasticReport:
    table: pd.DataFrame
    problems: list[str] = field(default_factory=list)


def elastic_drill(
    batches: BatchFn,
    *,
    cfg: Config = ELASTIC_CFG,
    save_at: int = 3,
    worlds: tuple = (1, 3),
    tol: float = ELASTIC_TOL,
    timeout: float = 90.0,
) -> ElasticReport:
    """Save at world 2 after ``save_at`` steps, resume at each world size in ``worlds`` to the end of the
    epoch."""
    steps = math.ceil(cfg.n_samples / cfg.batch_size)
    base = course_dist.launch(_train_part, 2, args=(cfg, "", -1, steps, None), timeout=timeout, stream=False)
    rows, problems = (
        [
            {
                "world": "2 (uninterrupted)",
                "steps": steps,
                "eval_loss": base[0]["eval"],
                "rel_diff": 0.0,
                "lost": 0,
                "repeated": 0,
            }
        ],
        [],
    )
    with tempfile.TemporaryDirectory(prefix="lab04-elastic-") as tmp:
        first = course_dist.launch(
            _train_part, 2, args=(cfg, tmp, save_at, save_at, None), timeout=timeout, stream=False
        )
        before = [i for r in first for i in r["seen"]]
        for w in worlds:
            res = course_dist.launch(
                _train_part, w, args=(cfg, tmp, -1, steps, batches), timeout=timeout, stream=False
            )
            seen = Counter(before + [i for r in res for i in r["seen"]])
            lost = cfg.n_samples - len(seen)
            repeated = sum(k - 1 for k in seen.values())
            rel = abs(res[0]["eval"] - base[0]["eval"]) / base[0]["eval"]
            rows.append(
                {
                    "world": f"2 -> {w}",
                    "steps": save_at + len(res[0]["losses"]),
                    "eval_loss": res[0]["eval"],
                    "rel_diff": rel,
                    "lost": lost,
                    "repeated": repeated,
                }
            )
            if lost or repeated:
                problems.append(
                    f"world 2 -> {w}: {lost} samples of the epoch never trained on, {repeated} repeated"
                )
            if rel > tol:
                problems.append(
                    f"world 2 -> {w}: eval loss {res[0]['eval']:.4f} vs {base[0]['eval']:.4f} "
                    f"uninterrupted (relative {rel:.3f} > {tol})"
                )
    return ElasticReport(pd.DataFrame(rows), problems)




def random_combos(rng: random.Random, count: int) -> list[tuple]:
    """``count`` (n, batch, world, consumed, epoch, seed) combinations of the classes above."""
    out = []
    for _ in range(count):
        n = rng.randint(1, 120)
        b = rng.randint(1, min(n, 16))
        out.append((n, b, rng.randint(1, 6), rng.randrange(n), rng.randint(0, 4), rng.randint(0, 99)))
    return out
