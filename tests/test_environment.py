"""environment.yml (conda users) and requirements.txt (pip, `make venv`) pin the same packages at the same
versions,
and the interpreter the course runs on matches the conda pin's major.minor."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins(lines: list[str]) -> dict[str, str]:
    pins = {}
    for raw in lines:
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        name, sep, version = line.partition("==")
        assert sep, f"not an exact pin: {raw!r} (use name==version)"
        pins[_norm(name)] = version.strip()
    return pins


def _conda() -> dict:
    return yaml.safe_load((ROOT / "environment.yml").read_text())


def test_environment_yml_pip_pins_equal_requirements() -> None:
    req = _pins((ROOT / "requirements.txt").read_text().splitlines())
    pip_sections = [d["pip"] for d in _conda()["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert len(pip_sections) == 1, "environment.yml needs exactly one pip: section"
    env = _pins(pip_sections[0])
    missing, extra = sorted(req.keys() - env.keys()), sorted(env.keys() - req.keys())
    assert not missing and not extra, (
        f"environment.yml lacks {missing}, has extra {extra} vs requirements.txt"
    )
    diff = {k: (req[k], env[k]) for k in req if req[k] != env[k]}
    assert not diff, f"version mismatch (requirements.txt, environment.yml): {diff}"


def test_requirements_agree_with_constraints() -> None:
    req = _pins((ROOT / "requirements.txt").read_text().splitlines())
    con = _pins((ROOT / "constraints.txt").read_text().splitlines())
    diff = {k: (v, con.get(k)) for k, v in req.items() if con.get(k) != v}
    assert not diff, f"requirements.txt vs constraints.txt (run `make freeze`): {diff}"


def test_python_version_pinned_and_matching() -> None:
    conda = [d for d in _conda()["dependencies"] if isinstance(d, str)]
    py = [d for d in conda if d.startswith("python")]
    assert py == ["python=3.11"], f"environment.yml python pin: {py}"
    assert sys.version_info[:2] >= (3, 10), sys.version
