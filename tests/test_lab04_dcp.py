"""Stretch C's machinery (course_dist/labkit/lab04/sharded.py, dcpstall.py) without a process group: the
publication rules flag each broken rule alone, the watcher records what it says, bad sizes are refused.
The drill itself (world 2 -> 1 and 3 with DCP) runs in the lab's reference notebook and the mutant check."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from course_dist.labkit.lab04 import dcpstall, sharded

STAGING, FINAL = ".tmp-step-00000004", "step-00000004"
FULL = [".metadata", "__0_0.distcp", "__1_0.distcp"]


def _records(contents: list[str] = FULL, staging_sync: bool = True, root_sync: bool = True) -> list[dict]:
    recs = [{"op": "fsync", "path": f"{STAGING}/__0_0.distcp", "t": 0.5}]
    if staging_sync:
        recs.append({"op": "fsync", "path": STAGING, "t": 1.0})
    recs.append({"op": "rename", "path": FINAL, "src": STAGING, "contents": contents, "t": 2.0})
    if root_sync:
        recs.append({"op": "fsync", "path": ".", "t": 3.0})
    return recs


def test_a_clean_publication_has_no_problems() -> None:
    got = sharded.publish_problems(_records(), STAGING, FINAL, 2)
    assert got == [], f"clean publication: expected no problems, got {got}"


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"contents": ["__0_0.distcp"]}, "before the write finished"),
        ({"staging_sync": False}, "not fsynced before its rename"),
        ({"root_sync": False}, "root was not fsynced after"),
    ],
)
def test_each_broken_rule_is_named_alone(kwargs: dict, needle: str) -> None:
    got = sharded.publish_problems(_records(**kwargs), STAGING, FINAL, 2)
    assert len(got) == 1 and needle in got[0], f"{kwargs}: expected one problem with {needle!r}, got {got}"


def test_no_rename_or_a_rename_of_something_else_is_flagged() -> None:
    got = sharded.publish_problems([], STAGING, FINAL, 2)
    assert got and "expected one rename" in got[0], f"no rename: got {got}"
    recs = [{"op": "rename", "path": FINAL, "src": "elsewhere", "contents": FULL, "t": 1.0}]
    got = sharded.publish_problems(recs, STAGING, FINAL, 2)
    assert got and "expected one rename" in got[0], f"rename from elsewhere: got {got}"


def test_watch_records_fsyncs_and_renames_with_contents_under_root(tmp_path: Path) -> None:
    (tmp_path / STAGING).mkdir()
    (tmp_path / STAGING / ".metadata").write_bytes(b"m")
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    with sharded.watch(tmp_path) as recs:
        for d in (tmp_path / STAGING, outside):
            fd = os.open(d, os.O_RDONLY)
            os.fsync(fd)
            os.close(fd)
        os.replace(tmp_path / STAGING, tmp_path / FINAL)
    assert (tmp_path / FINAL / ".metadata").is_file(), "the rename did not happen"
    got = [(r["op"], r["path"], r.get("src"), r.get("contents")) for r in recs]
    want = [("fsync", STAGING, None, None), ("rename", FINAL, STAGING, [".metadata"])]
    assert got == want, f"records: expected {want}, got {got}"
    outside.rmdir()


def test_watch_restores_os_functions(tmp_path: Path) -> None:
    before = (os.fsync, os.replace, os.rename)
    with pytest.raises(RuntimeError), sharded.watch(tmp_path):
        raise RuntimeError("inside")
    assert (os.fsync, os.replace, os.rename) == before, "watch left os patched after an exception"


def test_layout_marks_complete_directories(tmp_path: Path) -> None:
    root = sharded.layout(tmp_path / "r", {"step-00000001": True, "step-00000002": False})
    got = sorted((d.name, (d / ".metadata").is_file()) for d in root.iterdir())
    assert got == [("step-00000001", True), ("step-00000002", False)], f"layout: got {got}"


def test_bad_sizes_are_refused_with_the_value() -> None:
    with pytest.raises(ValueError, match="width=0"):
        sharded.build(width=0)
    with pytest.raises(ValueError, match="rounds=0"):
        dcpstall.measure_stall(rounds=0)


def test_state_bytes_counts_model_and_adamw_moments() -> None:
    # 16->8, 8->4: (16*8 + 8) + (8*4 + 4) = 172 parameters, three fp32 copies
    assert dcpstall._state_bytes(8, 1) == 3 * 4 * 172, dcpstall._state_bytes(8, 1)
