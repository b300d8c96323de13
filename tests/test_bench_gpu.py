"""bench/gpu.py: `python -m bench gpu` on a machine without a GPU says so, exits 0 and writes no page; the
full `python -m bench` run never picks it up; its argument builders load the references it times."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "bench" / "results" / "gpu.md"


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA node runs the real check instead")
@pytest.mark.parametrize("cmd", [["-m", "bench", "gpu"], ["-m", "bench.gpu"]])
def test_without_gpu_says_so_and_exits_0(cmd: list[str]) -> None:
    existed = PAGE.exists()
    before = PAGE.read_bytes() if existed else b""
    p = subprocess.run([sys.executable, *cmd], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, (p.returncode, p.stdout[-2000:], p.stderr[-2000:])
    assert "no CUDA device visible" in p.stdout and "gpu.md not written" in p.stdout, p.stdout
    assert PAGE.exists() == existed and (not existed or PAGE.read_bytes() == before), "no GPU: no page"


def test_full_run_does_not_include_gpu() -> None:
    names = sorted(f.stem for f in (ROOT / "bench").glob("bench_*.py"))
    assert "bench_gpu" not in names, names  # `python -m bench` runs bench_*.py only


def test_argument_builders_load_the_references() -> None:
    from bench import gpu

    ours, theirs = gpu._ddp_args()
    assert ours[0] == "bucketed" and callable(ours[1]) and theirs[:2] == ("torch", None), (ours, theirs)
    ours, theirs = gpu._tp_args()
    assert callable(ours[0]) and callable(ours[1]) and theirs[:2] == (None, None), (ours, theirs)
    assert ours[2:] == theirs[2:], (ours, theirs)  # same sizes on both sides of the ratio
