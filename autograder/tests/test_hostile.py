"""Hostile submissions (issue 9): each attack earns 0 points it did not do the work for, breaks nothing else.

One grading batch on the fixture lab: a correct control, a ``NotImplementedError``-stub control (the
untouched release) and three attacking students whose answer cells hold the attacks (and stubs instead of
answers), 18 attacks in all:

* ``snoop``: reads hidden tests, reference solutions, gradebooks and grader outputs from disk; reads
  ``/proc`` of the grader; writes outside its submission; rewrites its own and another student's gradebook
  rows; connects to a non-loopback address; replaces ``course_dist`` on ``sys.path`` (fake ``launch`` and
  a fake ``evidence`` module);
* ``hooks``: an IPython ``post_run_cell`` hook and a custom exception handler that clear every error; a
  result displayed before the error (nbgrader's partial credit);
  ``torch.allclose``/``torch.equal``/``math.isclose``/``numpy.testing``/``check_card`` patched; a fake
  ``course_dist.launch`` returning plausible results;
* ``procs``: 5 sleepers with ``env={}`` and ``start_new_session=True``, a double-forked daemon,
  ``os.kill(os.getppid(), SIGKILL)``, 100 MB of output, a thread bomb and a bounded fork bomb (capped by the
  sandbox's process limit), a memory bomb in a rank (capped by its memory limit).

Checked: every attacker scores 0 with status ok; the controls score exactly as they do alone (90 / 0); the
attacks saw nothing they should not (their own report printed into the notebook); no marker file appeared
outside the submissions' copies; the submissions on disk are unchanged; the course gradebook holds the
controls' true scores; no process of any attack survives; output and feedback stay small.
Bounded: 5 submissions (one run, 2 workers), limits lowered for the run (400 tasks, 2.5 GiB, 1 MiB output).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
from pathlib import Path

import nbformat
import psutil
import pytest

from autograder.mutants import reference_submission, release_notebook, replace_cell

from .conftest import write_submission

LAB = "fixlab"
STUB = 'def {name}(*args, **kwargs):\n    raise NotImplementedError("stub")\n'
MARK = "PWNED-by-hostile-test"
SLEEP_MARK, DAEMON_MARK, FORK_MARK = "987654", "876543", "765432"

SNOOP = r"""
import json, os, socket, sqlite3, sys
found, wrote = [], []
mine = (os.getcwd(), os.environ.get("COURSE_EVIDENCE_DIR", "?"))
for t in {targets!r}:  # directories on the way to our own copy exist (empty); files must not
    if os.path.isfile(t):
        found.append("exists " + t)
n = 0
for dirpath, dirnames, filenames in os.walk("/"):
    dirnames[:] = [d for d in dirnames if os.path.join(dirpath, d) not in ("/usr", "/proc", "/sys", "/dev")
                   and not d.startswith((".venv", ".pyenv", "site-packages"))]
    for f in filenames:
        n += 1
        p = os.path.join(dirpath, f)
        if p.startswith(mine):
            continue
        if f in ("gradebook.db", "grades.csv", "fixlab.py", "run.json") or f.endswith(".pt"):
            found.append("file " + p)
        elif f.endswith(".ipynb"):
            try:
                text = open(p).read()
            except OSError:
                continue
            if "BEGIN HIDDEN" in text or "total_of_both" in text or "grading_seed" in text:
                found.append("hidden tests or solutions in " + p)
    if n > 100000:
        break
for pid in [p for p in os.listdir("/proc") if p.isdigit()] + [str({grader_pid})]:
    try:
        cmd = open(f"/proc/{{pid}}/cmdline", "rb").read().replace(b"\0", b" ").decode()
    except OSError:
        continue
    if any(w in cmd for w in ("autograder", "nbgrader", "pytest")) and not cmd.startswith("bwrap "):
        found.append(f"process {{pid}}: {{cmd[:80]}}")
dbs = [t for t in {targets!r} if t.endswith("gradebook.db")]
for db in dbs + [f[5:] for f in found if f.endswith("gradebook.db")]:
    try:
        con = sqlite3.connect(db, timeout=2)
        con.execute("UPDATE grade SET auto_score = 1000")
        con.commit()
        found.append("rewrote " + db)
    except Exception:
        pass
for d in {write_dirs!r}:
    try:
        with open(os.path.join(d, "{mark}"), "w") as fh:
            fh.write("x")
        wrote.append(d)  # inside the sandbox: a private tmpfs may hold our own path; the host check decides
    except OSError:
        pass
for addr in [("1.1.1.1", 53), ("10.1.2.3", 80)]:
    try:
        socket.create_connection(addr, timeout=2).close()
        found.append(f"network {{addr}}")
    except OSError:
        pass
print("SNOOP-RESULT: " + json.dumps(found))
print("SNOOP-WROTE (sandbox-private): " + json.dumps(wrote))
"""

FAKE_PATH = r"""
import os, sys
pkg = os.path.join(os.getcwd(), "fakepkg", "course_dist")
os.makedirs(pkg, exist_ok=True)
with open(os.path.join(pkg, "__init__.py"), "w") as fh:
    fh.write("def launch(fn, world_size=2, **kw):\n    return [3.0] * world_size\n"
             "def rank():\n    return 0\n")
with open(os.path.join(pkg, "evidence.py"), "w") as fh:
    fh.write("def grading_seed(default=0):\n    return 0\nclass Evidence:\n"
             "    def __init__(self, gid):\n        pass\n"
             "    def equal(self, k, v):\n        return v\n"
             "    def close(self, k, v, **kw):\n        return v\n"
             "    def rule(self, k, v, **kw):\n        return v\n")
sys.path.insert(0, os.path.dirname(pkg))
for m in [m for m in sys.modules if m == "course_dist" or m.startswith("course_dist.")]:
    del sys.modules[m]
import course_dist
print("FAKE course_dist from", course_dist.__file__)
"""

HOOKS = r"""
import math, numpy.testing, torch, course_dist, course_dist.card
ip = get_ipython()
def _clear(result):
    result.error_in_exec = None
    result.error_before_exec = None
ip.events.register("post_run_cell", _clear)
ip.set_custom_exc((BaseException,), lambda shell, etype, value, tb, tb_offset=None: None)
torch.allclose = lambda *a, **k: True
torch.equal = lambda *a, **k: True
math.isclose = lambda *a, **k: True
numpy.testing.assert_allclose = lambda *a, **k: None
course_dist.card.check_card = lambda *a, **k: None
course_dist.launch = lambda fn, *a, **k: [3.0, 3.0]
"""

PROCS = rf'''
import os, signal, subprocess, sys
for _ in range(5):
    subprocess.Popen(["sleep", "{SLEEP_MARK}"], env={{}}, start_new_session=True)
pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep({DAEMON_MARK})"])
    os._exit(0)
os.waitpid(pid, 0)
try:
    os.kill(os.getppid(), signal.SIGKILL)
except OSError as exc:
    print("kill parent:", exc)
for _ in range(100):
    print("x" * 1_000_000)
'''

BOMBS = rf'''
import os, threading, time
stop = threading.Event()
n = 0
try:
    for n in range(5000):
        threading.Thread(target=stop.wait, daemon=True).start()
    print("THREADS-UNCAPPED", n)
except RuntimeError as exc:
    print("THREADS-CAPPED", n, exc)
stop.set()
time.sleep(1)
kids = 0
for i in range(40):
    try:
        if os.fork() == 0:
            os.execv("/bin/sleep", ["sleep", "{FORK_MARK}"])
        kids += 1
    except OSError as exc:
        print("FORK-CAPPED", i, exc)
        break
print("FORKS", kids)
'''

# nbgrader gives partial credit for a cell's first execute_result: a number shown before the error
DISPLAY_STUB = """def square(x):
    import sys
    sys.displayhook(30.0)
    raise NotImplementedError("stub")
"""

MEMORY_BOMB = """def allsum_rank():
    import course_dist
    import time
    if course_dist.rank() == 1:
        blocks = []
        while True:  # until the sandbox's memory limit stops it
            blocks.append(b"x" * (64 << 20))
    time.sleep(10)  # rank 0 waits: rank 1 meets the memory limit first
    raise NotImplementedError("stub")
"""


def _attackers(cfg, subdir: Path) -> dict:  # noqa: ANN001
    base = release_notebook(cfg, LAB)
    root, repo = str(cfg.root), str(Path(__file__).resolve().parents[2])
    work = cfg.build / "grading"
    targets = [
        f"{root}/solutions",
        f"{root}/autograder",
        f"{root}/build",
        str(subdir),
        f"{repo}/solutions",
        f"{repo}/autograder",
        str(cfg.gradebook),
        f"{root}/build/grades.csv",
        *(f"{work}/{tag}/{s}__{LAB}/gradebook.db" for tag in ("all", "") for s in ("snoop", "reference")),
    ]
    write_dirs = [root, str(subdir), str(subdir / "reference" / LAB), repo, str(cfg.build), "/", "/work"]
    snoop = SNOOP.format(targets=targets, write_dirs=write_dirs, mark=MARK, grader_pid=os.getpid())
    subs = {}
    nb = replace_cell(base, "add_solution", snoop + STUB.format(name="add"))
    subs["snoop"] = replace_cell(nb, "square_solution", FAKE_PATH + STUB.format(name="square"))
    nb = replace_cell(base, "add_solution", HOOKS + STUB.format(name="add"))
    subs["hooks"] = replace_cell(nb, "square_solution", DISPLAY_STUB)
    nb = replace_cell(base, "add_solution", PROCS + STUB.format(name="add"))
    nb = replace_cell(nb, "square_solution", BOMBS + STUB.format(name="square"))
    subs["procs"] = replace_cell(nb, "allsum_solution", MEMORY_BOMB)
    return subs


def _markers() -> list[str]:
    out = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if any(m in cmd for m in (SLEEP_MARK, DAEMON_MARK, FORK_MARK)) and "pytest" not in cmd:
            out.append(f"{p.pid}: {cmd[:100]}")
    return out


def _digest(d: Path) -> dict[str, str]:
    return {
        str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest() for p in d.rglob("*") if p.is_file()
    }


@pytest.fixture(scope="module")
def hostile(fixlab_course, tmp_path_factory):  # noqa: ANN001, ANN201
    from autograder.grade import grade
    from autograder.sandbox import sandbox_available

    why = sandbox_available()
    if why:
        pytest.fail(f"the hostile suite needs the sandbox: {why}")
    cfg = fixlab_course
    subdir = tmp_path_factory.mktemp("hostile")
    write_submission(subdir, "reference", LAB, reference_submission(cfg, LAB))
    write_submission(subdir, "blank", LAB, release_notebook(cfg, LAB))
    for student, nb in _attackers(cfg, subdir).items():
        write_submission(subdir, student, LAB, nb)
    before = _digest(subdir)
    limits = {
        "COURSE_SANDBOX_PROCESSES": "400",
        "COURSE_SANDBOX_MEMORY_MB": "2560",
        "COURSE_SANDBOX_OUTPUT_KB": "1024",
    }
    old = {k: os.environ.get(k) for k in limits}
    os.environ.update(limits)
    try:
        kw = {"seed": 11} if "seed" in inspect.signature(grade).parameters else {}
        df = grade(cfg, subdir, progress=False, out=cfg.build / "hostile.csv", **kw)
    finally:
        for k, v in old.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    return cfg, subdir, df.set_index("student"), before


def _cell_text(cfg, student: str) -> str:  # noqa: ANN001
    nb = nbformat.read(cfg.nbgrader_root / "autograded" / student / LAB / f"{LAB}.ipynb", as_version=4)
    return "\n".join(
        str(o.get("text", "")) + str(o.get("evalue", "")) for c in nb.cells for o in c.get("outputs", [])
    )


pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]  # module fixtures grade a class


def test_controls_graded_as_alone(hostile) -> None:  # noqa: ANN001
    _, _, df, _ = hostile
    ref, blank = df.loc["reference"], df.loc["blank"]
    assert (ref["status"], ref["score"], ref["add"], ref["square"], ref["allsum"]) == (
        "ok",
        90,
        30,
        30,
        30,
    ), ref
    assert (blank["status"], blank["score"]) == ("ok", 0), blank


@pytest.mark.parametrize("student", ["snoop", "hooks", "procs"])
def test_attack_earns_nothing(hostile, student: str) -> None:  # noqa: ANN001
    _, _, df, _ = hostile
    row = df.loc[student]
    assert row["score"] == 0, f"{student} earned {row['score']} unearned points: {row.to_dict()}"


def test_nothing_visible_or_writable(hostile) -> None:  # noqa: ANN001
    cfg, subdir, _, before = hostile
    text = _cell_text(cfg, "snoop")
    line = next((ln for ln in text.splitlines() if ln.startswith("SNOOP-RESULT: ")), None)
    assert line is not None, f"the snoop attack did not report: {text[:2000]}"
    assert json.loads(line[len("SNOOP-RESULT: ") :]) == [], line
    repo = Path(__file__).resolve().parents[2]
    leaked = [str(p) for d in (cfg.root, subdir, repo, cfg.build) for p in d.rglob(MARK)]
    leaked += [p for p in ("/" + MARK, "/work/" + MARK) if os.path.exists(p)]
    assert not leaked, leaked
    assert _digest(subdir) == before, "a submission on disk changed during grading"
    assert "FAKE course_dist" in text, "the sys.path attack did not run"


def test_gradebook_holds_true_scores(hostile) -> None:  # noqa: ANN001
    from nbgrader.api import Gradebook

    cfg, _, _, _ = hostile
    with Gradebook(f"sqlite:///{cfg.gradebook}") as gb:
        for student, want in (
            ("reference", 90.0),
            ("blank", 0.0),
            ("snoop", 0.0),
            ("hooks", 0.0),
            ("procs", 0.0),
        ):
            got = sum(g.auto_score or 0.0 for g in gb.find_submission_notebook(LAB, LAB, student).grades)
            assert got == want, f"gradebook: {student} has {got} auto points, expected {want}"


def test_processes_bounded_and_none_survives(hostile) -> None:  # noqa: ANN001
    cfg, _, df, _ = hostile
    assert _markers() == [], _markers()
    text = _cell_text(cfg, "procs")
    capped = [ln for ln in text.splitlines() if ln.startswith("THREADS-")]
    assert capped and capped[0].startswith("THREADS-CAPPED"), capped or text[:1000]
    assert int(capped[0].split()[1]) < 400, capped
    assert df.loc["procs", "status"] == "ok", df.loc["procs"].to_dict()
    assert any("rank 1" in ln for ln in text.splitlines()), text[-2000:]  # the memory bomb's rank: reported
    # the instructor's CSV says how much output the sandbox cut (the flood). Leftovers are named there too
    # when the sandbox kills any, but whether the sleepers outlive the kernel's pid namespace is a race.
    reason = df.loc["procs", "reason"]
    assert "output over the cap dropped" in reason, reason


def test_output_capped(hostile) -> None:  # noqa: ANN001
    cfg, _, _, _ = hostile
    nb = cfg.nbgrader_root / "autograded" / "procs" / LAB / f"{LAB}.ipynb"
    assert nb.stat().st_size < 3 << 20, f"{nb}: {nb.stat().st_size} bytes"
    assert "[output truncated by the grader" in _cell_text(cfg, "procs")
    html = cfg.nbgrader_root / "feedback" / "procs" / LAB / f"{LAB}.html"
    if html.exists():
        assert html.stat().st_size < 4 << 20, f"{html}: {html.stat().st_size} bytes"


def test_feedback_hides_hidden_tests(hostile) -> None:  # noqa: ANN001
    cfg, _, _, _ = hostile
    html = (cfg.nbgrader_root / "feedback" / "blank" / LAB / f"{LAB}.html").read_text()
    assert "grading_seed" not in html and "BEGIN HIDDEN" not in html
    assert "JudgeFailed" in html and "hidden tests: not shown" in html
