"""The student distribution (`python -m autograder student-repo DIR`) holds no answer, and a student's first
commands work from it: `make lab`'s set-up, JupyterLab without the grader's tools, one lab's visible tests.

What counts as an answer line (the filter): every line inside a `### BEGIN SOLUTION` / `### END SOLUTION`,
`### BEGIN HIDDEN TESTS` / `### END HIDDEN TESTS` or mark-scheme region of a file under `solutions/`, and
every line of a homework task's body in the reference package `solutions/homework/fttrainer/` (what
make_skeleton.py replaces by a stub). Lines are compared after `autograder.source.normalize_line`
(whitespace collapsed; in code, comments dropped) and ignored when trivial: shorter than
`autograder.source.MIN_LINE_CHARS` (16) characters (`return out`, `else:`, `)`, blank or punctuation-only
lines), or also present in the given part of a lab source or in the given code of the homework skeleton (the
release and the skeleton ship those by design). Of a `hints.yaml`, stages 1 and 2 are checked; stage 3 is the
near-solution DESIGN.md ships on request (`hint(id, 3)`).

Outside `course_dist/` no answer line may appear at all. `course_dist/` is the course's shared code (its
labkit is written in the same style as the answers, and DESIGN.md forbids it a solution): single lines such
as `with torch.no_grad():` are shared idioms, so there the test fails on a run of `MAX_SHARED_RUN + 1`
consecutive non-trivial answer lines, i.e. a copied body rather than an idiom. The longest runs present when
this test was written are 3 lines: lab04's given naive `simple_load` (the three `load_state_dict` calls the
exercise builds on), the homework drills' recomputation of the scaling table from the metrics logs, and the
Evidence example in `course_dist/evidence.py`'s docstring.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest
import yaml

from autograder.config import CourseConfig
from autograder.source import (
    MIN_LINE_CHARS,
    _regions,
    grade_id,
    hidden_lines,
    is_notebook_source,
    nontrivial,
    normalize_line,
    public_lines,
    read_source,
    solution_lines,
)
from autograder.student_repo import build_student_repo

CFG = CourseConfig()
ROOT = CFG.root
VENV_BIN = Path(sys.executable).parent
MAX_SHARED_RUN = 3
INSTRUCTOR_DIRS = {"solutions", "autograder", "mutants", "judges", "rubric", "build", "tests", "fttrainer"}
MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS", "MARK SCHEME")


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("student") / "course"
    build_student_repo(CFG, dest)
    return dest


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and ".git" not in p.relative_to(root).parts)


# ---- what is there, what is not -------------------------------------------------------------------------


def test_layout_is_what_a_student_needs(dist: Path) -> None:
    have = {str(p.relative_to(dist)) for p in _files(dist)}
    want = {"Makefile", "README.md", ".gitignore", "requirements.txt", "constraints.txt", "environment.yml"}
    for lab in CFG.lab_ids():
        want |= {f"labs/{lab}/{lab}.ipynb", f"labs/{lab}/hints.yaml"}
    want |= {"labs/homework/homework/__init__.py", "labs/homework/homework/train.py"}
    want |= {"course_dist/__init__.py"}
    assert want <= have, f"missing from the distribution: {sorted(want - have)}"
    tops = {p.relative_to(dist).parts[0] for p in _files(dist)}
    expected = {"labs", "course_dist", *(w for w in want if "/" not in w)}
    assert tops == expected, f"top level {sorted(tops)}, expected {sorted(expected)}"
    assert (dist / "constraints.txt").read_bytes() == (ROOT / "constraints.txt").read_bytes()
    for name in ("requirements.txt", "environment.yml"):  # the course's pins less nbgrader (issue 35)
        course = [ln for ln in (ROOT / name).read_text().splitlines() if "nbgrader==" not in ln]
        student = (dist / name).read_text().splitlines()
        assert student == course, f"{name}: the student's is not the course's less nbgrader"
        assert any("torch==" in ln for ln in student), f"{name} lost the torch pin"


def test_no_instructor_file_or_folder(dist: Path) -> None:
    bad_dirs = sorted(
        str(p.relative_to(dist)) for p in dist.rglob("*") if p.is_dir() and p.name in INSTRUCTOR_DIRS
    )
    assert not bad_dirs, f"instructor folders in the distribution: {bad_dirs}"

    # No file of solutions/ or autograder/ (references, mutants, judges, rubrics, grader) under any name, but
    # what is meant for students: the data the release copies (hints.yaml) and the student templates.
    def digest(path: Path) -> str:
        return hashlib.sha256(path.read_bytes()).hexdigest()

    shipped = {digest(p) for p in CFG.labs.rglob("*") if p.is_file()}
    shipped |= {digest(p) for p in (ROOT / "autograder" / "student_template").iterdir()}
    secret = {}
    for top in ("solutions", "autograder"):
        for p in (ROOT / top).rglob("*"):
            if p.is_file() and "__pycache__" not in p.parts and p.stat().st_size >= 64:
                if digest(p) not in shipped:
                    secret[digest(p)] = p.relative_to(ROOT)
    copied = {str(p.relative_to(dist)): str(secret[digest(p)]) for p in _files(dist) if digest(p) in secret}
    assert not copied, f"instructor files copied into the distribution (copy: original): {copied}"
    marked = {
        str(p.relative_to(dist)): [m for m in MARKERS if m in p.read_text(errors="replace")]
        for p in _files(dist)
    }
    marked = {k: v for k, v in marked.items() if v}
    assert not marked, f"nbgrader region markers in the distribution: {marked}"


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_no_rubric_text(dist: Path) -> None:
    """Neither the hand-grading criteria nor the descriptions of what the hidden tests check."""
    texts = []
    for path in sorted(CFG.rubric.glob("*.yaml")):
        for ex in yaml.safe_load(path.read_text())["exercises"]:
            for cell in ex["graded_cells"]:
                texts += [(path.name, cell["grade_id"], cell[k]) for k in ("criteria", "checks") if k in cell]
    assert texts, f"no rubric criteria found under {CFG.rubric}"
    corpus = {str(p.relative_to(dist)): _flat(p.read_text(errors="replace")) for p in _files(dist)}
    found = [
        (rubric, gid, where)
        for rubric, gid, text in texts
        for where, body in corpus.items()
        if _flat(text) in body
    ]
    assert not found, f"rubric text (rubric, grade_id, file) in the distribution: {found}"


def _skeleton_module():
    spec = importlib.util.spec_from_file_location("_mk_skel", CFG.solutions / "homework" / "make_skeleton.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _task_body_lines() -> set[str]:
    """Non-trivial lines of the reference package's task bodies (what the skeleton's stubs replace)."""
    mk = _skeleton_module()
    out: set[str] = set()
    for (module, qual), _ in mk.TASKS.items():
        src = (mk.REF / f"{module}.py").read_text()
        fn = mk._defs(ast.parse(src))[qual]
        first = fn.body[0]
        has_doc = isinstance(first, ast.Expr) and isinstance(getattr(first, "value", None), ast.Constant)
        start = first.end_lineno if has_doc else first.lineno - 1
        out |= nontrivial(src.splitlines()[start : fn.end_lineno])
    for module, names in mk.REMOVE.items():
        src = (mk.REF / f"{module}.py").read_text()
        for name in names:
            node = mk._defs(ast.parse(src))[name]
            out |= nontrivial(src.splitlines()[node.lineno - 1 : node.end_lineno])
    return out


def _answer_lines() -> tuple[dict[str, str], set[str]]:
    """(answer line -> where it comes from, lines shipped by design)."""
    answers: dict[str, str] = {}
    given: set[str] = set()
    for path in sorted(CFG.solutions.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        rel = str(path.relative_to(ROOT))
        if is_notebook_source(path):
            nb = read_source(path)
            given |= public_lines(nb)
            for line in solution_lines(nb) | hidden_lines(nb):
                answers.setdefault(line, rel)
            for cell in nb.cells:
                for region in _regions(cell.source, "BEGIN MARK SCHEME", "END MARK SCHEME"):
                    for line in nontrivial(region, cell.cell_type):
                        answers.setdefault(line, f"{rel} (mark scheme)")
        elif path.suffix in (".py", ".md", ".yaml", ".txt"):
            text = path.read_text(errors="replace")
            for begin, end in (("BEGIN SOLUTION", "END SOLUTION"), ("BEGIN HIDDEN", "END HIDDEN")):
                for region in _regions(text, begin, end):
                    for line in nontrivial(region):
                        answers.setdefault(line, rel)
    for line in _task_body_lines():
        answers.setdefault(line, "solutions/homework/fttrainer (a task body)")
    for path in (ROOT / "homework").glob("*.py"):
        given |= nontrivial(path.read_text().splitlines())
    return answers, given


def _dist_lines(path: Path) -> list[str]:
    """The file's lines, normalized as the answers are (notebooks cell by cell, by cell type; of a hints.yaml
    the first two stages: the third is the near-solution DESIGN.md gives on request)."""
    text = path.read_text(errors="replace")
    if path.name == "hints.yaml":
        text = "\n".join(stage for stages in yaml.safe_load(text).values() for stage in stages[:2])
    elif path.suffix == ".ipynb":
        nb = nbformat.reads(text, as_version=4)
        return [normalize_line(ln, c.cell_type) for c in nb.cells for ln in c.source.splitlines()]
    # a text file: a line counts both as code and as prose (a comment holding an answer counts)
    return [n for ln in text.splitlines() for n in {normalize_line(ln), normalize_line(ln, "markdown")}]


def test_no_solution_or_hidden_test_line(dist: Path) -> None:
    answers, given = _answer_lines()
    secret = {line: src for line, src in answers.items() if line not in given}
    assert len(secret) > 500, f"only {len(secret)} answer lines found: the scan of solutions/ is broken"
    leaks, runs = [], []
    for path in _files(dist):
        rel = path.relative_to(dist)
        lines = [ln for ln in _dist_lines(path) if len(ln) >= MIN_LINE_CHARS]
        if rel.parts[0] != "course_dist":
            leaks += [(str(rel), ln, secret[ln]) for ln in lines if ln in secret]
            continue
        run: list[str] = []
        for ln in lines:
            run = [*run, ln] if ln in secret else []
            if len(run) > MAX_SHARED_RUN:
                runs.append((str(rel), run[:]))
    assert not leaks, f"{len(leaks)} answer line(s) in the distribution (file, line, from): {leaks[:5]}"
    assert not runs, (
        f"course_dist shares more than {MAX_SHARED_RUN} consecutive lines with an answer: {runs[:3]}"
    )


def test_the_scan_finds_a_planted_answer(tmp_path: Path) -> None:
    """The leak check can fail: a reference solution copied into a distribution is caught."""
    answers, given = _answer_lines()
    secret = {line for line in answers if line not in given}
    planted = tmp_path / "labs" / "lab02" / "notes.py"
    planted.parent.mkdir(parents=True)
    planted.write_text((CFG.solutions / "lab02" / "lab02.py").read_text())
    found = [ln for ln in _dist_lines(planted) if ln in secret]
    assert len(found) > 20, f"a planted copy of lab02's source showed only {len(found)} answer lines"


def test_hints_never_read_from_solutions() -> None:
    src = (ROOT / "course_dist" / "hints.py").read_text()
    code = "\n".join(ln for ln in src.splitlines() if not ln.lstrip().startswith("#"))
    candidates = code[code.index("def _candidates") : code.index("def load_hints")]
    assert "solutions" not in candidates, f"course_dist.hints looks in solutions/:\n{candidates}"


# ---- a student's first commands -------------------------------------------------------------------------


def _make_n(dist: Path, *args: str, fake_uid: str | None = None, tmp: Path | None = None) -> str:
    # under `make test` MAKELEVEL/MAKEFLAGS are inherited: a nested make would print "Entering/Leaving
    # directory" lines around the commands this reads
    nested = ("MAKELEVEL", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES")
    env = {k: v for k, v in os.environ.items() if k not in nested}
    if fake_uid is not None:
        assert tmp is not None
        fake = tmp / "bin"
        fake.mkdir(exist_ok=True)
        (fake / "id").write_text(f"#!/bin/sh\necho {fake_uid}\n")
        (fake / "id").chmod(0o755)
        env["PATH"] = f"{fake}:{env['PATH']}"
    r = subprocess.run(
        ["make", "-n", "--no-print-directory", *args],
        cwd=dist,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, f"make -n {' '.join(args)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
    return r.stdout


def test_make_lab_dry_run(dist: Path, tmp_path: Path) -> None:
    out = _make_n(dist, "lab")
    for want in (
        "-m venv .venv",
        "pip install -q --disable-pip-version-check --no-compile -r requirements.txt -c constraints.txt",
        f"{dist}\\n{dist}/work/homework\\n",  # the .pth: course_dist, and the student's homework package
        ".venv/bin/python -m course_dist.workcopy",
        f"JUPYTER_CONFIG_DIR={dist}/work/.jupyter .venv/bin/jupyter lab --notebook-dir=work",
    ):
        assert want in out, f"make -n lab lacks {want!r}; it printed:\n{out}"
    last = out.splitlines()[-1]
    assert ("--allow-root" in last) == (os.getuid() == 0), f"uid {os.getuid()}, jupyter command: {last}"
    as_user = _make_n(dist, "lab", fake_uid="1000", tmp=tmp_path).splitlines()[-1]
    as_root = _make_n(dist, "lab", fake_uid="0", tmp=tmp_path).splitlines()[-1]
    assert "--allow-root" not in as_user and "--allow-root" in as_root, (as_user, as_root)
    remote = _make_n(dist, "lab", "NO_BROWSER=1").splitlines()[-1]
    assert "--no-browser --ip=127.0.0.1" in remote, remote


@pytest.fixture(scope="module")
def work(dist: Path) -> Path:
    """`make lab`'s set-up, run from the distribution's own course_dist (its workcopy writes dist/work)."""
    env = {**os.environ, "PYTHONPATH": str(dist)}
    r = subprocess.run(
        [sys.executable, "-m", "course_dist.workcopy"],
        cwd=dist,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return dist / "work"


def test_work_copy_made_from_the_distribution(work: Path) -> None:
    for lab in CFG.lab_ids():
        assert (work / lab / f"{lab}.ipynb").is_file(), f"no work copy of {lab} under {work}"
    assert (work / "homework" / "homework" / "train.py").is_file(), "no skeleton beside homework.ipynb"
    page = json.loads((work / ".jupyter" / "labconfig" / "page_config.json").read_text())
    assert page["disabledExtensions"].get("@jupyter/nbgrader") is True, page


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> tuple[int, str]:
    """(HTTP status, body); status 0 while nothing listens yet."""
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, ""
    except urllib.error.URLError:
        return 0, ""


def test_jupyterlab_as_make_lab_starts_it_shows_no_grader_tools(dist: Path, work: Path) -> None:
    """The Makefile's own jupyter command (as root it needs --allow-root): nbgrader's lab extension is in the
    page config's disabledExtensions, its server extensions are not loaded (formgrader answers 404; 302 to a
    login without make lab's configuration)."""
    words = shlex.split(_make_n(dist, "lab", "NO_BROWSER=1").splitlines()[-1])
    env = dict(os.environ)
    while "=" in words[0]:
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    assert words[:2] == [".venv/bin/jupyter", "lab"], words
    jupyter = str(VENV_BIN / "jupyter")
    port, token = _free_port(), "student-repo-test"
    cmd = [
        jupyter,
        *words[1:],
        f"--port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
    ]
    server = subprocess.Popen(
        cmd, cwd=dist, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(600):
            if server.poll() is not None:
                pytest.fail(f"jupyter lab exited {server.returncode}: {server.stderr.read()[-2000:]}")
            if _get(f"{base}/api/status?token={token}")[0] == 200:
                break
            time.sleep(0.1)
        else:
            pytest.fail("jupyter lab did not answer /api/status within 60 s")
        code, _ = _get(f"{base}/formgrader?token={token}")
        assert code == 404, f"/formgrader answered {code}: nbgrader's server extension is loaded"
        code, page = _get(f"{base}/lab?token={token}")
        disabled = re.search(r'"disabledExtensions": (\[[^\]]*\])', page)
        assert code == 200 and disabled, f"/lab answered {code} without a page config"
        assert "@jupyter/nbgrader" in json.loads(disabled.group(1)), disabled.group(1)
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_lab02_visible_tests_run_from_the_distribution(dist: Path, work: Path, monkeypatch) -> None:
    """lab02's work copy, in a kernel whose course_dist is the distribution's (PYTHONPATH as make lab's .pth):
    the set-up cell runs, Exercise 1's visible tests fail on the stub and pass with the reference answer, the
    hint comes from the release, and the notebook's language_info is what the kernel reports (JupyterLab then
    opens it unmodified)."""
    from nbclient import NotebookClient

    monkeypatch.setenv("PYTHONPATH", f"{dist}{os.pathsep}{dist / 'work' / 'homework'}")
    path = work / "lab02" / "lab02.ipynb"
    copy = nbformat.read(path, as_version=4)
    cells = {grade_id(c): c for c in copy.cells if grade_id(c)}
    setup = next(c for c in copy.cells if c.cell_type == "code")
    ref = {grade_id(c): c for c in read_source(CFG.solutions / "lab02" / "lab02.py").cells if grade_id(c)}
    probe = nbformat.v4.new_code_cell(
        "import course_dist\nfrom course_dist.hints import _find\nprint(course_dist.__file__)\n"
        "print(_find('lab02.sampler')[1])"
    )
    nb = nbformat.v4.new_notebook(metadata=copy.metadata)
    nb.cells = [probe, setup, cells["sampler_solution"], cells["sampler_tests"], ref["sampler_solution"]]
    nb.cells.append(nbformat.v4.new_code_cell(cells["sampler_tests"].source))
    client = NotebookClient(
        nb, timeout=120, allow_errors=True, resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute()

    def errors(cell):
        return [f"{o.ename}: {o.evalue}" for o in cell.outputs if o.output_type == "error"]

    printed = "".join(o.get("text", "") for o in nb.cells[0].outputs).split()
    assert printed and all(p.startswith(str(dist)) for p in printed), f"expected under {dist}: {printed}"
    assert not errors(nb.cells[1]), f"set-up cell: {errors(nb.cells[1])}"
    stub = errors(nb.cells[3])
    assert stub and stub[0].startswith("NotImplementedError: lab02"), f"the stub's test cell raised {stub}"
    assert not errors(nb.cells[5]), f"the reference answer fails the visible tests: {errors(nb.cells[5])}"
    assert copy.metadata["language_info"] == nb.metadata["language_info"], (
        f"work copy {copy.metadata['language_info']} != kernel {nb.metadata['language_info']}"
    )


def test_untracked_files_are_not_published(tmp_path: Path) -> None:
    """An instructor's scratch file beside tracked course material is left out of the copy."""
    import shutil
    import subprocess

    from autograder.student_repo import _untracked_ignore

    src = tmp_path / "repo"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "kept.py").write_text("x = 1\n")
    (src / "pkg" / "scratch.py").write_text("answer = 42\n")
    subprocess.run(["git", "init", "-q"], cwd=src, check=True)
    subprocess.run(["git", "add", "pkg/kept.py"], cwd=src, check=True)
    shutil.copytree(src / "pkg", tmp_path / "out", ignore=_untracked_ignore(src))
    copied = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert copied == ["kept.py"], f"expected only the tracked kept.py, copied {copied}"
