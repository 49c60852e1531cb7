"""A file a user owns is replaced whole or not at all: roadtest.atomic, the one piece every
writer of such files (traces, results databases, reports, cache files) goes through."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from roadtest.atomic import replacing, write_atomically


def test_the_new_text_replaces_the_old_and_nothing_else_is_left(tmp_path: Path) -> None:
    path = tmp_path / "report.html"
    path.write_text("old")
    write_atomically(path, "new")
    assert path.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_a_failure_midway_leaves_the_old_file_and_no_temporary_one(tmp_path: Path) -> None:
    path = tmp_path / "golden.trace"
    path.write_bytes(b"old")
    with pytest.raises(KeyboardInterrupt), replacing(path) as tmp:
        tmp.write_bytes(b"half")
        raise KeyboardInterrupt  # Ctrl-C while writing
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["golden.trace"]


def test_a_database_written_beside_its_log_files_replaces_the_old_one(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    path.write_bytes(b"not a database")
    with replacing(path, companions=("-wal", "-shm")) as tmp:
        conn = sqlite3.connect(tmp)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE t (x)")
        conn.execute("INSERT INTO t VALUES (1)")
        conn.commit()
        conn.close()
    reader = sqlite3.connect(path)
    assert reader.execute("SELECT x FROM t").fetchall() == [(1,)]
    reader.close()  # the last connection: SQLite removes the database's own log files
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.sqlite"]


def test_the_new_file_gets_the_mode_a_plain_open_would(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.write_text("x")
    path = tmp_path / "written"
    write_atomically(path, "x")
    assert path.stat().st_mode == plain.stat().st_mode
