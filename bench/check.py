"""``make bench-check``: every results page names the commit it measured and the paths it measures, and is
not older than the last change to those paths.

A page carries two lines (``bench.write`` adds them)::

    commit: <40-hex sha of HEAD when it was measured>
    measures: <path> <path> ...          (files or folders, relative to the repository root)

A page is stale when some commit after its own changed one of those paths: its figures describe code that is
no longer there. ``python -m bench.check`` prints one line per page and exits 1 when any page is unstamped or
stale (re-run that benchmark on a quiet box; ``python -m bench <name>``); ``python -m bench.check launch ddp``
checks only those pages.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMIT = re.compile(r"^commit: ([0-9a-f]{40})\b", re.M)
MEASURES = re.compile(r"^measures: (.+)$", re.M)


def _git(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)


def page_problem(page: Path, root: Path = ROOT) -> str:
    """'' when ``page`` is stamped and fresh, else why not (one line)."""
    text = page.read_text(encoding="utf-8")
    c, m = COMMIT.search(text), MEASURES.search(text)
    if not c or not m:
        missing = " and ".join(x for x, hit in (("commit:", c), ("measures:", m)) if not hit)
        return f"no {missing} line: re-run `python -m bench {page.stem}` to stamp it"
    commit, paths = c.group(1), m.group(1).split()
    if "uncommitted" in text[c.start() : text.find("\n", c.start())]:
        return f"measured at {commit[:10]} with uncommitted changes to the measured paths: re-run it"
    gone = [p for p in paths if not (root / p).exists()]
    if gone:
        return f"measures paths that do not exist: {gone}"
    if _git("cat-file", "-e", f"{commit}^{{commit}}", cwd=root).returncode != 0:
        return f"commit {commit[:10]} is not in this repository"
    last = _git("log", "-1", "--format=%H", "--", *paths, cwd=root).stdout.strip()
    if last and _git("merge-base", "--is-ancestor", last, commit, cwd=root).returncode != 0:
        when = _git("log", "-1", "--format=%cs %s", last, cwd=root).stdout.strip()[:90]
        return f"stale: measured at {commit[:10]}, but {last[:10]} ({when}) changed {' '.join(paths)} since"
    return ""


def check(results: Path | None = None, root: Path = ROOT) -> dict[str, str]:
    """Page name -> problem ('' = fresh) for every ``*.md`` under ``results``."""
    results = results or root / "bench" / "results"
    return {p.name: page_problem(p, root) for p in sorted(results.glob("*.md"))}


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.check [name ...]``: all pages, or the named ones (``launch`` or ``launch.md``)."""
    names = sys.argv[1:] if argv is None else argv
    problems = check()
    if names:
        want = {n if n.endswith(".md") else f"{n}.md" for n in names}
        unknown = sorted(want - problems.keys())
        if unknown:
            raise ValueError(f"no results page named {unknown}; pages: {sorted(problems)}")
        problems = {k: v for k, v in problems.items() if k in want}
    for name, why in problems.items():
        print(f"{name}: {why or 'fresh'}")
    bad = sum(bool(w) for w in problems.values())
    print(f"bench-check: {len(problems) - bad} fresh, {bad} unstamped or stale")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
