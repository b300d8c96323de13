"""The sandbox, the judge's file handling and the grading preprocessors, piece by piece (seconds each).

The whole-batch attacks live in ``test_hostile.py``; these pin each mechanism on its own: what a sandboxed
process sees and may write, that its kernel answers and can be interrupted, that leftovers die, that evidence
files that are not plain files are refused, and that nbgrader's scoring cannot be steered past the judge.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import nbformat
import pytest

from autograder.sandbox import SandboxSpec, bwrap_argv, sandbox_available

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", autouse=True)
def _need_bwrap() -> None:
    why = sandbox_available()
    if why:
        pytest.fail(why)


def _inside(tmp_path: Path, script: str) -> str:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    argv = bwrap_argv(SandboxSpec(workdir=work)) + ["/bin/sh", "-c", script]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout


def test_view_is_the_course_code_and_the_copy_only(tmp_path: Path) -> None:
    out = _inside(
        tmp_path,
        f"ls {REPO}; test -e {REPO}/solutions && echo SOLUTIONS; test -e {REPO}/autograder && echo GRADER; "
        f"touch {REPO}/course_dist/x 2>/dev/null && echo RW-COURSE; touch /x 2>/dev/null && echo RW-ROOT; "
        "touch ./mine && echo RW-COPY; touch /tmp/t && echo RW-TMP; echo PID $$; "
        f"test -e {tmp_path}/outside && echo OUTSIDE",
    )
    (tmp_path / "outside").write_text("host file beside the copy")
    assert "SOLUTIONS" not in out and "GRADER" not in out and "OUTSIDE" not in out, out
    assert "course_dist" in out and "RW-COPY" in out and "RW-TMP" in out, out
    assert "RW-COURSE" not in out and "RW-ROOT" not in out, out
    assert int(out.split("PID ")[1].split()[0]) < 10, out  # its own pid namespace


def test_network_is_loopback_only(tmp_path: Path) -> None:
    py = REPO / ".venv" / "bin" / "python"
    exe = py if py.exists() else Path(os.sys.executable)
    code = (
        "import socket\ntry:\n    socket.create_connection(('1.1.1.1', 53), timeout=2); print('NET')\n"
        "except OSError as e:\n    print('BLOCKED', e.errno)\n"
        "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); print('LOOPBACK', s.getsockname()[1])"
    )
    out = _inside(tmp_path, f'{exe} -c "{code}"')
    assert "BLOCKED" in out and "LOOPBACK" in out and "NET" not in out.replace("BLOCKED", ""), out


@pytest.mark.slow
def test_kernel_runs_interrupts_and_leaves_nothing(tmp_path: Path) -> None:
    import psutil
    from nbclient import NotebookClient

    from autograder.sandbox import SandboxedKernelManager

    work, ev = tmp_path / "work", tmp_path / "ev"
    work.mkdir()
    ev.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(s)
        for s in (
            "import os; print(os.getcwd(), os.environ['COURSE_EVIDENCE_DIR'])",
            "import time\ntry:\n    time.sleep(60)\nexcept KeyboardInterrupt:\n    print('INTERRUPTED')",
            "import subprocess; subprocess.Popen(['sleep', '543219'], env={}, start_new_session=True)",
        )
    ]
    client = NotebookClient(
        nb,
        timeout=8,
        interrupt_on_timeout=True,
        allow_errors=True,
        kernel_name="python3",
        kernel_manager_class=SandboxedKernelManager,
        resources={"metadata": {"path": str(work)}},
    )
    km = client.create_kernel_manager()
    km.sandbox = SandboxSpec(workdir=work, writable=(ev,))
    km.extra_env = {"COURSE_EVIDENCE_DIR": str(ev)}
    client.execute()
    km.close()
    assert nb.cells[0].outputs[0]["text"].split() == [str(work), str(ev)], nb.cells[0].outputs
    assert "INTERRUPTED" in nb.cells[1].outputs[0]["text"], nb.cells[1].outputs
    alive = [p.pid for p in psutil.process_iter(["cmdline"]) if "543219" in " ".join(p.info["cmdline"] or [])]
    assert not alive, alive


def test_evidence_that_is_not_a_plain_file_is_refused(tmp_path: Path) -> None:
    from autograder.judge import judge_cell, load_evidence

    os.mkfifo(tmp_path / "a_tests.pt")  # would block a plain open()
    os.symlink("/etc/passwd", tmp_path / "b_tests.pt")
    (tmp_path / "c_tests.pt").write_bytes(b"not a torch file")
    got = load_evidence(tmp_path)
    assert all(isinstance(v, ValueError) for v in got.values()), got
    ref = {"k": {"value": 1, "spec": {"cmp": "equal"}}}
    assert judge_cell("b_tests", ref, got["b_tests"]) == ["b_tests: b_tests.pt: not a regular file"]


def _test_cell(source: str, outputs: list) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["nbgrader"] = {"grade": True, "solution": False, "grade_id": "x_tests", "points": 5}
    cell.outputs = outputs
    return cell


def test_judge_decides_and_partial_credit_is_gone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nbgrader.utils import determine_grade

    from autograder.nbgrader_ext import JudgeEvidence
    from course_dist.evidence import Evidence

    ref, stu = tmp_path / "ref", tmp_path / "stu"
    monkeypatch.setenv("COURSE_EVIDENCE_DIR", str(ref))
    Evidence("x_tests").equal("f(2)", 4)
    monkeypatch.setenv("COURSE_EVIDENCE_DIR", str(stu))
    Evidence("x_tests").equal("f(2)", 5)
    shown = nbformat.v4.new_output("execute_result", data={"text/plain": "5.0"}, execution_count=1)
    nb = nbformat.v4.new_notebook()
    nb.cells = [_test_cell("f(2)", [shown])]
    pp = JudgeEvidence(reference_dir=str(ref))
    nb, _ = pp.preprocess(nb, {"course_evidence_dir": str(stu)})
    assert determine_grade(nb.cells[0]) == (0, 5.0), nb.cells[0].outputs
    assert "f(2): got 5, expected 4" in nb.cells[0].outputs[-1]["evalue"]
    monkeypatch.setenv("COURSE_EVIDENCE_DIR", str(stu))
    Evidence("x_tests").equal("f(2)", 4)
    err = nbformat.v4.new_output("error", ename="AssertionError", evalue="visible", traceback=[])
    nb.cells = [_test_cell("f(2)", [shown, err])]  # a result shown before an error: nbgrader's 5/5
    nb, _ = pp.preprocess(nb, {"course_evidence_dir": str(stu)})
    assert determine_grade(nb.cells[0]) == (0, 5.0), nb.cells[0].outputs
    nb.cells = [_test_cell("f(2)", [])]
    nb, _ = pp.preprocess(nb, {"course_evidence_dir": str(stu)})
    assert (
        determine_grade(nb.cells[0]) == (5.0, 5.0)
        and "judge: 1 checks passed" in nb.cells[0].outputs[-1]["text"]
    )


def test_feedback_hides_the_hidden_part() -> None:
    from autograder.nbgrader_ext import HideHiddenTests

    err = nbformat.v4.new_output(
        "error", ename="JudgeFailed", evalue="k: got 1", traceback=["src line 7 ..."]
    )
    cell = _test_cell("assert f(1) == 1\n### BEGIN HIDDEN TESTS\nsecret_case()\n### END HIDDEN TESTS", [err])
    cell, _ = HideHiddenTests().preprocess_cell(cell, {}, 0)
    assert "secret_case" not in cell.source and "assert f(1) == 1" in cell.source
    assert cell.outputs[0]["traceback"] == ["JudgeFailed: k: got 1"]


def test_common_rules() -> None:
    from autograder.judges import common

    common.true(True)
    common.between(0.5, None, lo=0, hi=1)
    common.ge(9.0, 10.0, rtol=0.2)
    common.le(11.0, 10.0, rtol=0.2)
    for bad in (
        lambda: common.true(1),
        lambda: common.between(2, None, lo=0, hi=1),
        lambda: common.ge(1, 10),
    ):
        with pytest.raises(AssertionError):
            bad()
    with pytest.raises(AssertionError, match="latency: missing"):
        common.card({"card": {"lab": "x", "justification": "w " * 30}, "measured": {}})


@pytest.mark.slow
def test_memory_bomb_kills_only_the_kernel(tmp_path: Path) -> None:
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    from autograder.sandbox import SandboxedKernelManager

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("b = []\nwhile True:\n    b.append(b'x' * (32 << 20))")]
    client = NotebookClient(
        nb,
        timeout=60,
        kernel_name="python3",
        kernel_manager_class=SandboxedKernelManager,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    km = client.create_kernel_manager()
    km.sandbox = SandboxSpec(workdir=tmp_path, memory_bytes=600 << 20)
    with pytest.raises(DeadKernelError):  # the cgroup's OOM killer, well before 60 s
        client.execute()
    km.close()


def test_workdir_is_a_quota_filled_with_the_copy(tmp_path: Path) -> None:
    """Issue 32 item 3: the workdir is a size-capped tmpfs holding a copy of the staged files: writing past
    the quota fails inside (ENOSPC), nothing reaches the host's disk, and the staged copy is unchanged."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "staged.txt").write_text("from the grader")
    spec = SandboxSpec(workdir=work, work_bytes=8 << 20)
    script = (
        "cat staged.txt; echo; dd if=/dev/zero of=big bs=1M count=32 2>/dev/null && echo WROTE-ALL "
        "|| echo FULL; "
        "echo changed > staged.txt; cat staged.txt"
    )
    out = subprocess.run(bwrap_argv(spec) + ["/bin/sh", "-c", script], capture_output=True, text=True,
                         timeout=60).stdout
    assert out.startswith("from the grader") and "FULL" in out and "WROTE-ALL" not in out, out
    assert not (work / "big").exists() and (work / "staged.txt").read_text() == "from the grader", (
        f"the host copy changed: {sorted(p.name for p in work.iterdir())}")
