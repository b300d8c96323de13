"""Sharded grading: N = 2 shards merged give the same CSV rows and gradebook scores as one run (fixlab),
merging is idempotent and refuses shards that graded differently."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from autograder.grade import grade
from autograder.merge import merge_shards, read_csv, read_submissions, run_file
from autograder.mutants import reference_submission, release_notebook, replace_cell
from autograder.outcome import SEP
from autograder.shard import parse_shard, shard_students

from .conftest import write_submission

LAB = "fixlab"
SEED = 5


def test_shard_partition_is_deterministic_and_complete() -> None:
    names = [f"s{i:02d}" for i in range(11)]
    parts = [shard_students(list(reversed(names)), (k, 3)) for k in range(3)]
    assert sorted(sum(parts, [])) == names and parts[0] == ["s00", "s03", "s06", "s09"], parts
    assert parse_shard("2/4") == (2, 4)
    for bad in ("4/4", "1", "-1/2", "a/b"):
        with pytest.raises(ValueError, match="--shard"):
            parse_shard(bad)


pytestmark = pytest.mark.timeout(1800)  # the module fixture grades a small class (minutes on 2 cores)


@pytest.fixture(scope="module")
def runs(fixlab_course, tmp_path_factory):  # noqa: ANN001, ANN201
    tmp = tmp_path_factory.mktemp("shards")
    subs = tmp / "submitted"
    ref = reference_submission(fixlab_course, LAB)
    write_submission(subs, "ann", LAB, ref)
    write_submission(subs, "bob", LAB, release_notebook(fixlab_course, LAB))
    write_submission(
        subs, "cat", LAB, replace_cell(ref, "square_solution", "def square(x):\n    return x + x\n")
    )
    (subs / "dan").mkdir()
    write_submission(subs / "dan", "x", "y", ref)  # dan/x/y/y.ipynb: a misplaced notebook still gets a row
    one = fixlab_course.with_(build=tmp / "one")
    many = fixlab_course.with_(build=tmp / "many")
    single = grade(one, subs, seed=SEED, progress=False, feedback=False)
    shards = []
    for k in range(2):
        grade(many, subs, seed=SEED, shard=(k, 2), progress=False, feedback=False)
        shards.append(many.build / "shards" / f"{k}-of-2")
    return one, many, single, shards


def _rows(df: pd.DataFrame) -> list[dict]:
    """Rows without timings, reasons reduced to the exercises they name: the message's wording can depend on
    races (which rank of a failing launch raised first), the exercises that lost points cannot."""
    df = df.drop(columns=["seconds"]).sort_values(["student", "lab"])
    df["reason"] = [
        sorted(p.split(":", 1)[0] for p in r.split(SEP)) if st == "ok" else r
        for r, st in zip(df["reason"], df["status"], strict=True)
    ]
    return df.to_dict("records")


def test_two_shards_merged_equal_one_run(runs) -> None:  # noqa: ANN001
    one, many, single, shards = runs
    assert sorted(single["student"]) == ["ann", "bob", "cat", "dan"], single[["student", "status"]]
    parts = [set(read_csv(d / "grades.csv")["student"]) for d in shards]
    assert parts[0].isdisjoint(parts[1]) and parts[0] | parts[1] == {"ann", "bob", "cat", "dan"}, parts
    merged = merge_shards(shards, many.build / "grades.csv", many.gradebook)
    assert _rows(merged) == _rows(read_csv(one.build / "grades.csv"))
    assert read_submissions(many.gradebook) == read_submissions(one.gradebook)
    again = merge_shards(shards, many.build / "grades.csv", many.gradebook)  # idempotent
    assert _rows(again) == _rows(merged)
    assert read_submissions(many.gradebook) == read_submissions(one.gradebook)


def test_merge_refuses_mismatched_shards(runs, tmp_path: Path) -> None:  # noqa: ANN001
    _, _, _, shards = runs
    bad = tmp_path / "bad"
    shutil.copytree(shards[1], bad)
    rf = run_file(bad / "grades.csv")
    run = json.loads(rf.read_text())
    rf.write_text(json.dumps({**run, "seed": SEED + 1}))
    with pytest.raises(ValueError, match="seed"):
        merge_shards([shards[0], bad], tmp_path / "g.csv", tmp_path / "gb.db")
    rf.write_text(json.dumps({**run, "labs": {LAB: "0000000000000000"}}))
    with pytest.raises(ValueError, match="lab fixlab differs"):
        merge_shards([shards[0], bad], tmp_path / "g.csv", tmp_path / "gb.db")
    with pytest.raises(ValueError, match="not a shard directory"):
        merge_shards([tmp_path], tmp_path / "g.csv", tmp_path / "gb.db")
    twin = tmp_path / "twin"
    shutil.copytree(shards[0], twin)  # the same students graded twice (shards cut with different N?)
    with pytest.raises(ValueError, match="more than one shard"):
        merge_shards([shards[0], twin], tmp_path / "g.csv", tmp_path / "gb.db")


def test_shard_without_seed_is_refused(runs, tmp_path: Path) -> None:  # noqa: ANN001
    one, _, _, _ = runs
    (tmp_path / "subs" / "ann").mkdir(parents=True)
    with pytest.raises(ValueError, match="--shard needs --seed"):
        grade(one.with_(build=tmp_path / "b"), tmp_path / "subs", shard=(0, 2), progress=False)
