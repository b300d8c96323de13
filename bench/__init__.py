"""Benchmarks: each ``bench/bench_<name>.py`` has ``main(quick=False)``; it writes ``results/<name>.md``.

python -m bench               # every benchmark, full repeats (minutes)
python -m bench --quick       # smoke run: tiny repeats, numbers not for quoting
python -m bench launch        # only bench_launch.py
"""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def machine() -> str:
    """One line naming what the numbers were measured on (they mean nothing without it)."""
    import torch

    return (
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {os.cpu_count()} CPU cores, "
        f"load average {os.getloadavg()[0]:.1f}; Python {platform.python_version()}, "
        f"torch {torch.__version__}, "
        f"{torch.cuda.device_count()} CUDA device(s)"
    )


def write(name: str, text: str) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.md"
    path.write_text(text)
    return path
