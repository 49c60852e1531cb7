"""The sweep's results database: drivers recorded survive reopening and a SIGKILL in the
middle of writing, resume's done(), shards partition the drivers stably, merge joins
shards atomically. Files in tmp_path; no guest."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from roadtest.errors import RoadtestError, UsageError
from roadtest.sweep.outcome import DriverResult, Finding, Kind, Stage
from roadtest.sweep.results import ResultsDB, merge, parse_shard, shard

TREE, KERNEL = "linux-6.12.118", "um 6.12.118 sweep"


def sample(i: int, *, stage: Stage = Stage.EXERCISED, findings: int | None = None) -> DriverResult:
    """Driver number i: i % 4 findings (unless told), each with a large report."""
    count = i % 4 if findings is None else findings
    return DriverResult(
        module=f"drv{i}",
        subsystem=("iio", "hwmon", "rtc")[i % 3],
        source=f"drivers/x/drv{i}.c",
        machine="um",
        device="example",
        match=f"vendor,drv{i}",
        stage=stage,
        detail=f"detail {i}",
        examples=i,
        attributes_read=2 * i,
        attributes_written=i // 2,
        coverage=10 * i,
        seconds=i / 4,
        findings=tuple(
            Finding(
                kind=Kind.KASAN,
                signature=f"kasan: slab-out-of-bounds in drv{i}_read{n}",
                title=f"BUG: KASAN: slab-out-of-bounds in drv{i}_read{n}",
                report=f"report {i}.{n}\n" + "x" * 20_000,
                reproducer='{"plan": [1, 2]}',
            )
            for n in range(count)
        ),
    )


def test_recorded_driver_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    with ResultsDB.open(path, tree=TREE, kernel=KERNEL) as db:
        db.record(sample(3))
        db.record(sample(0, stage=Stage.PROBE_FAILED))
    with ResultsDB.open(path, tree=TREE, kernel=KERNEL) as db:
        assert db.results() == [sample(0, stage=Stage.PROBE_FAILED), sample(3)]
        assert db.done() == {("drivers/x/drv0.c", "i2c"), ("drivers/x/drv3.c", "i2c")}


def test_rerecording_replaces_the_driver_and_its_findings(tmp_path: Path) -> None:
    with ResultsDB.open(tmp_path / "r.db", tree=TREE, kernel=KERNEL) as db:
        db.record(sample(1, findings=3))
        db.record(sample(1, stage=Stage.BOUND, findings=1))
        assert db.results() == [sample(1, stage=Stage.BOUND, findings=1)]


def test_resume_skips_what_is_done(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    drivers = [sample(i) for i in range(6)]
    with ResultsDB.open(path, tree=TREE, kernel=KERNEL) as db:
        for result in drivers[:4]:
            db.record(result)
    with ResultsDB.open(path, tree=TREE, kernel=KERNEL) as db:
        todo = [d for d in drivers if (d.source, d.bus) not in db.done()]
        assert todo == drivers[4:]


def test_another_tree_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    _db(path, [sample(1)])
    with pytest.raises(RoadtestError) as err:
        ResultsDB.open(path, tree="linux-6.13", kernel=KERNEL)
    assert TREE in str(err.value) and "linux-6.13" in str(err.value)
    assert "\n" not in str(err.value)
    # A kernel rebuilt from the same tree resumes it; the file keeps its first kernel.
    with ResultsDB.open(path, tree=TREE, kernel="rebuilt") as db:
        assert (db.kernel, db.results()) == (KERNEL, [sample(1)])
    with ResultsDB.existing(path) as db:
        assert (db.tree, db.kernel) == (TREE, KERNEL)


def test_a_file_that_is_not_results_is_refused_and_left_alone(tmp_path: Path) -> None:
    text = tmp_path / "notes.db"
    text.write_text("not a database at all, just text that is long enough " * 20)
    with pytest.raises(RoadtestError, match="notes.db"):
        ResultsDB.open(text, tree=TREE, kernel=KERNEL)
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t (x)")
    with pytest.raises(RoadtestError, match="not a sweep results file"):
        ResultsDB.open(other, tree=TREE, kernel=KERNEL)
    assert {r[0] for r in sqlite3.connect(other).execute("SELECT name FROM sqlite_master")} == {"t"}


# A writer that records drivers start, start+1, ... until it is killed.
_WRITER = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from test_sweep_results import KERNEL, TREE, sample
from roadtest.sweep.results import ResultsDB
db = ResultsDB.open(Path(sys.argv[2]), tree=TREE, kernel=KERNEL)
i = int(sys.argv[3])
while True:
    db.record(sample(i))
    i += 1
    if i == int(sys.argv[3]) + 10:
        print("ready", flush=True)
"""


def test_sigkill_while_writing_leaves_only_whole_drivers(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    here = str(Path(__file__).parent)
    # Several kills at different moments, each writer resuming the same file.
    for round, delay in enumerate((0.0, 0.013, 0.031, 0.057)):
        writer = subprocess.Popen(
            [sys.executable, "-c", _WRITER, here, str(path), str(1000 * round)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert writer.stdout is not None
        assert writer.stdout.readline() == "ready\n"
        time.sleep(delay)
        os.kill(writer.pid, signal.SIGKILL)
        assert writer.wait() == -signal.SIGKILL
        writer.stdout.close()

    with ResultsDB.open(path, tree=TREE, kernel=KERNEL) as db:
        results = db.results()
        assert len(results) >= 4 * 10
        for result in results:
            i = int(result.module.removeprefix("drv"))
            assert result == sample(i)  # its findings all there, none of another's
        assert db.done() == {(r.source, r.bus) for r in results}
    assert sqlite3.connect(path).execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_parse_shard() -> None:
    assert parse_shard("1/1") == (1, 1)
    assert parse_shard("3/4") == (3, 4)
    for bad in ("0/4", "5/4", "1/0", "1", "1/2/3", "a/b", "-1/2", " 1/2", "1/2 ", "+1/2", ""):
        with pytest.raises(UsageError) as err:
            parse_shard(bad)
        message = str(err.value)
        assert repr(bad) in message and "\n" not in message


def test_shards_partition_the_drivers() -> None:
    drivers = [f"drivers/x/drv{i}.c" for i in range(300)]
    for n in (1, 2, 3, 7):
        shards = [shard(drivers, f"{k}/{n}", key=str) for k in range(1, n + 1)]
        assert sorted(d for s in shards for d in s) == sorted(drivers)
        assert sum(len(s) for s in shards) == len(drivers)
        for s in shards:  # in the input's order
            assert s == sorted(s, key=drivers.index)
        if n > 1:  # and not all in one
            assert all(len(s) > len(drivers) / n / 2 for s in shards)


def test_adding_a_driver_moves_no_other() -> None:
    drivers = [f"drivers/x/drv{i}.c" for i in range(200)]
    added = ["drivers/new/first.c", *drivers]
    for k in range(1, 5):
        before = shard(drivers, f"{k}/4", key=str)
        after = shard(added, f"{k}/4", key=str)
        assert [d for d in after if d != "drivers/new/first.c"] == before


def test_shard_by_key_of_objects() -> None:
    drivers = [sample(i) for i in range(20)]
    shards = [shard(drivers, f"{k}/3", key=lambda d: d.source) for k in (1, 2, 3)]
    assert sorted(d.source for s in shards for d in s) == sorted(d.source for d in drivers)


def _db(path: Path, results: list[DriverResult], tree: str = TREE) -> Path:
    with ResultsDB.open(path, tree=tree, kernel=KERNEL) as db:
        for result in results:
            db.record(result)
    return path


def test_merge_is_the_union_of_shards(tmp_path: Path) -> None:
    drivers = [sample(i) for i in range(30)]
    parts = [
        _db(tmp_path / f"{k}.db", shard(drivers, f"{k}/3", key=lambda d: d.source))
        for k in (1, 2, 3)
    ]
    out = tmp_path / "all.db"
    assert merge(parts, out) == 30
    with ResultsDB.open(out, tree=TREE, kernel=KERNEL) as db:
        assert sorted(db.results(), key=lambda d: d.examples) == drivers
    assert sorted(p.name for p in tmp_path.iterdir()) == ["1.db", "2.db", "3.db", "all.db"]


def test_merge_keeps_the_copy_with_findings_then_progress(tmp_path: Path) -> None:
    found = sample(1, stage=Stage.PROBE_FAILED, findings=1)
    clean = sample(1, stage=Stage.EXERCISED, findings=0)
    bound = sample(2, stage=Stage.BOUND, findings=0)
    exercised = sample(2, stage=Stage.EXERCISED, findings=0)
    a = _db(tmp_path / "a.db", [clean, exercised])
    b = _db(tmp_path / "b.db", [found, bound])
    out = tmp_path / "out.db"
    assert merge([a, b], out) == 2
    with ResultsDB.existing(out) as db:
        assert db.results() == [found, exercised]


def test_merge_into_one_of_its_sources(tmp_path: Path) -> None:
    a = _db(tmp_path / "a.db", [sample(1)])
    b = _db(tmp_path / "b.db", [sample(2)])
    assert merge([a, b], a) == 2
    with ResultsDB.existing(a) as db:
        assert db.results() == [sample(1), sample(2)]


def test_merge_refuses_another_tree_and_leaves_out_alone(tmp_path: Path) -> None:
    a = _db(tmp_path / "a.db", [sample(1)])
    b = _db(tmp_path / "b.db", [sample(2)], tree="linux-6.13")
    out = _db(tmp_path / "out.db", [sample(7)])
    with pytest.raises(RoadtestError) as err:
        merge([a, b], out)
    assert TREE in str(err.value) and "linux-6.13" in str(err.value)
    with ResultsDB.existing(out) as db:
        assert db.results() == [sample(7)]
    with pytest.raises(RoadtestError, match="no such results file"):
        merge([a, tmp_path / "missing.db"], tmp_path / "new.db")
    assert not (tmp_path / "new.db").exists()
    with pytest.raises(UsageError):
        merge([], out)


def test_merge_interrupted_while_writing_leaves_out_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = _db(tmp_path / "a.db", [sample(i) for i in range(5)])
    out = _db(tmp_path / "out.db", [sample(7)])
    calls = 0
    real_record = ResultsDB.record

    def record_then_fail(self: ResultsDB, result: DriverResult) -> None:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise KeyboardInterrupt
        real_record(self, result)

    monkeypatch.setattr(ResultsDB, "record", record_then_fail)
    with pytest.raises(KeyboardInterrupt):
        merge([a], out)
    monkeypatch.undo()
    with ResultsDB.existing(out) as db:
        assert db.results() == [sample(7)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.db", "out.db"]
