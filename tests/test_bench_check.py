"""bench/check.py: a results page is fresh only at or after the last commit that changed what it measures."""

from __future__ import annotations

import subprocess
from pathlib import Path

from bench.check import check


def _git(repo: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    import os

    r = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, env={**os.environ, **env})
    assert r.returncode == 0, (args, r.stderr)
    return r.stdout.strip()


def test_pages_fresh_stale_and_unstamped(tmp_path: Path) -> None:
    repo = tmp_path
    _git(repo, "init", "-q")
    (repo / "code.py").write_text("x = 1\n")
    (repo / "other.py").write_text("y = 1\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "one")
    first = _git(repo, "rev-parse", "HEAD")
    res = repo / "bench" / "results"
    res.mkdir(parents=True)
    (res / "a.md").write_text(f"# a\n\ncommit: {first}\nmeasures: code.py\n")
    (res / "b.md").write_text(f"# b\n\ncommit: {first}\nmeasures: other.py\n")
    (res / "c.md").write_text("# c\n\nno stamp\n")
    (res / "d.md").write_text(f"# d\n\ncommit: {first} (with uncommitted changes)\nmeasures: other.py\n")
    assert check(res, repo)["a.md"] == "", check(res, repo)
    (repo / "code.py").write_text("x = 2\n")
    _git(repo, "commit", "-qam", "two")
    got = check(res, repo)
    assert got["a.md"].startswith("stale: measured at"), got
    assert got["b.md"] == "", got  # other.py did not change after the page's commit
    assert got["c.md"].startswith("no commit: and measures:"), got
    assert "uncommitted" in got["d.md"], got


# The shared benchmarks' pages (issue 25): stamped by bench.write, load and rounds stated, every figure as
# min / median / max, a plot beside the page. (Freshness is `make bench-check`'s job: it changes with every
# commit to the measured code, so it is not asserted here.)
OWN_PAGES = ("launch", "collectives", "ddp", "lab01")


def test_shared_pages_stamped_with_spread_and_plot() -> None:
    from bench.check import COMMIT, MEASURES, ROOT

    for name in OWN_PAGES:
        page = ROOT / "bench" / "results" / f"{name}.md"
        text = page.read_text(encoding="utf-8")
        assert COMMIT.search(text) and MEASURES.search(text), f"{page}: no commit:/measures: stamp"
        for must in ("load average", "rounds", "min / median / max"):
            assert must in text, f"{page}: does not state {must!r}"
        assert f"({name}.png)" in text and (page.parent / f"{name}.png").exists(), f"{page}: no plot"


def test_spread_and_verdict() -> None:
    import pytest

    from bench import spread, verdict

    assert spread([3.0, 1.0, 2.0], "{:.0f}") == "1 / 2 / 3"
    assert verdict(1.21, 1.2) == "MISS" and verdict(1.2, 1.2) == "ok"
    assert verdict(4.9, 5.0, at_most=False) == "MISS"
    with pytest.raises(ValueError, match=r"\[\]"):
        spread([])


def test_check_named_pages_only(capsys) -> None:
    import pytest

    from bench.check import main

    with pytest.raises(ValueError, match=r"nope\.md"):
        main(["nope"])
    main(["launch"])
    out = capsys.readouterr().out
    assert out.startswith("launch.md: ") and "collectives.md" not in out, out
