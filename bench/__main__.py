"""Run every ``bench/bench_*.py`` module's ``main()`` in turn: ``python -m bench [--quick] [name ...]``."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from pathlib import Path

log = logging.getLogger("bench")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    p.add_argument("names", nargs="*", help="benchmarks to run (default: all), e.g. launch collectives")
    p.add_argument("--quick", action="store_true", help="smoke run with tiny repeats")
    ns = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    here = Path(__file__).resolve().parent
    names = ns.names or sorted(f.stem[len("bench_") :] for f in here.glob("bench_*.py"))
    failed = []
    for name in names:
        log.info("=== bench_%s (quick=%s)", name, ns.quick)
        try:
            importlib.import_module(f"bench.bench_{name}").main(quick=ns.quick)
        except Exception:
            log.exception("bench_%s failed", name)
            failed.append(name)
    if failed:
        log.error("failed: %s", failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
