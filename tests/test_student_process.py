"""The process boundary's two pieces without a sandbox (issue 32): the data-only wire format, and the student
host behind proxies (the graded path with bubblewrap is autograder/tests/test_boundary.py)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import torch

from course_dist import _wire
from course_dist.card import Limit
from course_dist.errors import LaunchTimeout, RankError

ROOT = Path(__file__).resolve().parents[1]


def test_wire_round_trips_what_rank_results_hold() -> None:
    df = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    df.attrs["protocol"] = ["rule"]
    value = {
        "t": torch.randn(3, 2), "bf16": torch.ones(2, dtype=torch.bfloat16), "scalar": torch.tensor(3),
        "bool": torch.tensor([True, False]), "empty": torch.zeros(2, 0), "floats": [1.5, math.inf],
        "big": 2**70, (1, 2): "tuple key", "set": {1, 2}, "size": torch.Size([2, 3]), "dtype": torch.float16,
        "df": df, "path": Path("/tmp/x"), "limit": Limit(1.0, "s", "note"), "bytes": b"\x00\x01",
    }
    back = _wire.decode(_wire.encode(value))
    assert torch.equal(back["t"], value["t"]) and back["bf16"].dtype == torch.bfloat16
    assert back["scalar"].shape == () and back["empty"].shape == (2, 0) and back["big"] == 2**70
    assert back[(1, 2)] == "tuple key" and back["set"] == {1, 2} and back["size"] == torch.Size([2, 3])
    assert back["df"].equals(df) and back["df"].attrs == {"protocol": ["rule"]}, back["df"]
    assert back["limit"] == value["limit"] and back["path"] == Path("/tmp/x") and back["bytes"] == b"\x00\x01"
    assert math.isinf(back["floats"][1])


def test_wire_refuses_what_it_cannot_rebuild_without_running_code() -> None:
    class Mine:
        pass

    with pytest.raises(_wire.WireError, match="Mine"):
        _wire.encode(Mine())
    # a dataclass tag naming a class outside the course, or malformed bytes: refused, nothing imported
    for head in (b'{"dc":"os:system","fields":{"d":[]}}', b"not json", b'{"zz":1}'):
        blob = len(head).to_bytes(8, "big") + head
        with pytest.raises(_wire.WireError):
            _wire.decode(blob)


def test_wire_carries_the_course_exceptions() -> None:
    e = LaunchTimeout("hung", timeout=3.0, stacks={0: "a", 1: "b"}, last_collective={0: {"op": "x"}})
    back = _wire.decode(_wire.encode(e))
    assert isinstance(back, LaunchTimeout) and back.stacks == {0: "a", 1: "b"} and str(back) == "hung"
    r = _wire.decode(_wire.encode(RankError("rank 1 raised", rank=1, remote_traceback="tb")))
    assert isinstance(r, RuntimeError) and r.rank == 1, vars(r)
    odd = _wire.decode(_wire.encode(type("Custom", (Exception,), {})("boom")))
    assert isinstance(odd, _wire.StudentError) and type(odd).__name__ == "Custom" and str(odd) == "boom", odd
    # a student's own class still satisfies an `except` on its builtin base (a test's raises(ValueError, ...))
    shape = _wire.decode(_wire.encode(type("ShapeError", (KeyError, ValueError), {})("rank 2: 40 % 3")))
    assert isinstance(shape, KeyError) and isinstance(shape, ValueError), type(shape).__mro__
    oserr = _wire.decode(_wire.encode(type("DiskFull", (OSError,), {})(28, "no space")))
    assert isinstance(oserr, OSError) and "no space" in str(oserr), (type(oserr).__mro__, str(oserr))


@pytest.fixture()
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    sock = str(tmp_path / "s.sock")
    proc = subprocess.Popen([sys.executable, "-m", "course_dist.student", "--host", sock], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while not os.path.exists(sock):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read().decode()[-2000:]
        time.sleep(0.05)
    import course_dist.student as student

    monkeypatch.setenv(student.SOCKET_VAR, sock)
    monkeypatch.setattr(student, "_CLIENT", None)
    monkeypatch.setattr(student, "_SYNC", None)
    yield student
    proc.kill()
    proc.wait()


def test_answer_cells_reach_only_their_declared_names(host, monkeypatch) -> None:  # noqa: ANN001
    import course_dist

    ns: dict = {}
    monkeypatch.setattr(host, "_user_ns", lambda: ns)  # the trusted side's namespace, for this test
    real_launch = course_dist.launch
    source = (
        "%time _x = 1\n"
        "import course_dist\n"
        "def double(t):\n    return t * 2\n"
        "course_dist.launch = print          # a patch over there\n"
        "launch = print                       # a bare name over there\n"
        "value = 7\n"
    )
    host.run_answer("x_solution", source, ["double", "value"])
    assert set(ns) == {"double", "value"}, f"bound {sorted(ns)}: only the declared names may come back"
    assert ns["value"] == 7 and isinstance(ns["double"], host.StudentProxy)
    assert torch.equal(ns["double"](torch.ones(2)), torch.full((2,), 2.0))
    assert course_dist.launch is real_launch, "a patch in the student process reached the trusted side"
    with pytest.raises(ValueError, match="nope 3"):
        host.run_answer("y_solution", "def bad():\n    raise ValueError('nope 3')\nbad()\n", ["bad"])
    assert isinstance(ns.get("bad"), host.StudentProxy), "bound although the cell raised after defining it"


def test_answer_cells_get_the_names_they_read_once_per_value(host, monkeypatch) -> None:  # noqa: ANN001
    ns: dict = {"offset": 5, "data": [1, 2], "unused": {"big": list(range(100))}}
    monkeypatch.setattr(host, "_user_ns", lambda: ns)
    sent: list[set] = []
    real = host._context

    def spy(source: str | None = None) -> dict:
        out = real(source)
        sent.append(set(out))
        return out

    monkeypatch.setattr(host, "_context", spy)
    host.run_answer("a_solution", "def shift(x):\n    return x + offset\nfirst = shift(data[0])\n",
                    ["shift", "first"])
    assert ns["first"] == 6 and sent[-1] == {"offset", "data"}, f"sent {sent[-1]}: only what the cell reads"
    ns["offset"] = 10  # read by an earlier cell's function: kept in sync; data unchanged: not sent again
    host.run_answer("b_solution", "again = shift(1)\n", ["again"])
    assert ns["again"] == 11 and sent[-1] == {"offset"}, f"sent {sent[-1]}, expected only the rebound offset"
    # a magic does not parse: every name not sent yet goes, as before
    host.run_answer("c_solution", "%time z = 1\nsize = len(unused['big'])\n", ["size"])
    assert ns["size"] == 100 and "unused" in sent[-1] and "data" not in sent[-1], sent[-1]
    host.run_answer("d_solution", "n = len(globals()['data'])\n", ["n"])  # read dynamically: every name
    assert ns["n"] == 2, ns


def test_a_request_waits_for_the_host_to_listen(tmp_path: Path) -> None:
    """The grader starts the student process alongside the trusted kernel and does not wait for it; a
    request sent while it still starts (and imports torch ahead of the answer cells) is answered."""
    import operator

    from course_dist import student

    sock = str(tmp_path / "s.sock")
    env = {**os.environ, "COURSE_STUDENT_WARM": "torch"}
    proc = subprocess.Popen([sys.executable, "-m", "course_dist.student", "--host", sock], cwd=tmp_path,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        got = student._Client(sock).request("run", fn=operator.add, args=(2, 3), kwargs={})
        assert got == 5, f"got {got!r}, expected 5"
    finally:
        proc.kill()
        proc.wait()
