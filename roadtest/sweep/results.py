"""The sweep's results database: one SQLite file per sweep (or per shard of one), a row per
driver (a source file and a bus: a file with an I2C and an SPI driver is two) and its
findings. A sweep runs for hours and may be killed at any moment: each
driver is written in one transaction, so the file only ever holds whole drivers, and a
resumed sweep skips the ones it holds. Also: splitting the drivers into shards
(`--shard K/N`) and merging the shards' files into one."""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import TypeVar

from roadtest.atomic import replacing
from roadtest.errors import RoadtestError, UsageError
from roadtest.sweep.outcome import DriverResult, Finding, Kind, Stage

# Bump when the tables change: an older file is then refused, not misread.
SCHEMA_VERSION = "2"  # 2: a driver is its source and its bus

_TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS drivers (
    source TEXT NOT NULL,
    bus TEXT NOT NULL,
    module TEXT NOT NULL,
    subsystem TEXT NOT NULL,
    machine TEXT NOT NULL,
    device TEXT NOT NULL,
    match TEXT NOT NULL,
    stage TEXT NOT NULL,
    detail TEXT NOT NULL,
    examples INTEGER NOT NULL,
    attributes_read INTEGER NOT NULL,
    attributes_written INTEGER NOT NULL,
    coverage INTEGER NOT NULL,
    seconds REAL NOT NULL,
    findings INTEGER NOT NULL,  -- how many rows of `findings` are its: a check of wholeness
    PRIMARY KEY (source, bus)
);
CREATE TABLE IF NOT EXISTS findings (
    source TEXT NOT NULL,
    bus TEXT NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    signature TEXT NOT NULL,
    title TEXT NOT NULL,
    report TEXT NOT NULL,
    reproducer TEXT NOT NULL,
    PRIMARY KEY (source, bus, seq),
    FOREIGN KEY (source, bus) REFERENCES drivers(source, bus)
);
"""

_DRIVER_COLUMNS = (
    "source, bus, module, subsystem, machine, device, match, stage, detail, examples, "
    "attributes_read, attributes_written, coverage, seconds, findings"
)

# The order of progress, for merge: a later stage is further.
_STAGES = tuple(Stage)


def finding_id(result: DriverResult, index: int) -> str:
    """The name `roadtest sweep --reproduce` takes for `result.findings[index]`: its
    driver's key (its source, and its bus unless I2C) and its number counted from 1
    (drivers/rtc/rtc-pcf8563.c:1, drivers/rtc/rtc-pcf2127.c@spi:1), unique in a sweep and
    readable in a shell."""
    return f"{result.key}:{index + 1}"


class ResultsDB:
    """One sweep's results file. Open with `ResultsDB.open` (or `existing`), use as a
    context manager or call close()."""

    def __init__(self, path: Path, conn: sqlite3.Connection, tree: str, kernel: str) -> None:
        self.path = path
        self.tree = tree
        self.kernel = kernel
        self._conn = conn

    @classmethod
    def open(cls, path: Path, *, tree: str, kernel: str) -> ResultsDB:
        """Create the file, or open it to resume. A file made for another kernel tree is
        refused: its results would be mixed with this run's. The kernel's description is
        the one the file was made with (a kernel rebuilt from the same tree resumes it)."""
        conn = _connect(path)
        try:
            with _transaction(conn):
                if not _has_meta(conn) and _has_tables(conn):
                    raise RoadtestError(f"{path}: not a sweep results file, left as it is")
                _create(conn)
                meta = _meta(conn)
                if not meta:
                    conn.executemany(
                        "INSERT INTO meta VALUES (?, ?)",
                        [("schema", SCHEMA_VERSION), ("tree", tree), ("kernel", kernel)],
                    )
                    meta = _meta(conn)
            _check_schema(path, meta)
            if meta["tree"] != tree:
                raise RoadtestError(
                    f"{path} holds the results of tree {meta['tree']!r}, not of {tree!r}: "
                    "give another results file, or remove this one to start over"
                )
        except BaseException:
            conn.close()
            raise
        return cls(path, conn, meta["tree"], meta["kernel"])

    @classmethod
    def existing(cls, path: Path) -> ResultsDB:
        """Open a results file that must exist, for whatever tree and kernel it holds."""
        if not path.is_file():
            raise RoadtestError(f"{path}: no such results file")
        conn = _connect(path)
        try:
            meta = _meta(conn) if _has_meta(conn) else {}
            _check_schema(path, meta)
        except BaseException:
            conn.close()
            raise
        return cls(path, conn, meta["tree"], meta["kernel"])

    def record(self, result: DriverResult) -> None:
        """Write one driver and its findings, replacing what the file held for its source
        and bus. One transaction: after a crash the file holds the driver whole, or as
        before."""
        key = (result.source, result.bus)
        with _transaction(self._conn):
            self._conn.execute("DELETE FROM findings WHERE source = ? AND bus = ?", key)
            self._conn.execute("DELETE FROM drivers WHERE source = ? AND bus = ?", key)
            self._conn.execute(
                f"INSERT INTO drivers ({_DRIVER_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    result.source,
                    result.bus,
                    result.module,
                    result.subsystem,
                    result.machine,
                    result.device,
                    result.match,
                    result.stage.value,
                    result.detail,
                    result.examples,
                    result.attributes_read,
                    result.attributes_written,
                    result.coverage,
                    result.seconds,
                    len(result.findings),
                ),
            )
            self._conn.executemany(
                "INSERT INTO findings (source, bus, seq, kind, signature, title, report, "
                "reproducer) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (*key, seq, f.kind.value, f.signature, f.title, f.report, f.reproducer)
                    for seq, f in enumerate(result.findings)
                ],
            )

    def done(self) -> set[tuple[str, str]]:
        """The (source, bus) of the drivers the file holds: a resumed sweep skips them."""
        return {(row[0], row[1]) for row in self._conn.execute("SELECT source, bus FROM drivers")}

    def results(self) -> list[DriverResult]:
        """Every driver the file holds, by source, then bus."""
        findings: dict[tuple[str, str], list[Finding]] = {}
        for source, bus, kind, signature, title, report, reproducer in self._conn.execute(
            "SELECT source, bus, kind, signature, title, report, reproducer FROM findings "
            "ORDER BY source, bus, seq"
        ):
            findings.setdefault((source, bus), []).append(
                Finding(Kind(kind), signature, title, report, reproducer)
            )
        out = []
        for row in self._conn.execute(
            f"SELECT {_DRIVER_COLUMNS} FROM drivers ORDER BY source, bus"
        ):
            source, bus = row[0], row[1]
            out.append(
                DriverResult(
                    source=source,
                    bus=bus,
                    module=row[2],
                    subsystem=row[3],
                    machine=row[4],
                    device=row[5],
                    match=row[6],
                    stage=Stage(row[7]),
                    detail=row[8],
                    examples=row[9],
                    attributes_read=row[10],
                    attributes_written=row[11],
                    coverage=row[12],
                    seconds=row[13],
                    findings=tuple(findings.get((source, bus), ())),
                )
            )
        return out

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> ResultsDB:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _connect(path: Path) -> sqlite3.Connection:
    try:
        # Autocommit: _transaction says where each transaction begins and ends. The timeout
        # waits out another process's write (two shards on one file) instead of failing.
        conn = sqlite3.connect(path, timeout=60, isolation_level=None)
    except sqlite3.Error as err:
        raise RoadtestError(f"{path}: cannot open the results file: {err}") from err
    try:
        # WAL: a commit appends to the log and never rewrites pages in place, so a process
        # killed at any point leaves the last committed state; readers (a report made while
        # the sweep runs) do not block the writer. synchronous=FULL: an fsync of the log
        # at each commit, so that a driver the sweep has moved past is on disk even after
        # a power cut, not only after a SIGKILL (which NORMAL already survives). One
        # commit per driver, each seconds of guest time: the fsync costs nothing.
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
    except sqlite3.DatabaseError as err:
        conn.close()
        raise RoadtestError(f"{path}: not a results file ({err})") from err
    return conn


@contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    # IMMEDIATE takes the write lock at once: no upgrade from a read lock that could fail.
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _create(conn: sqlite3.Connection) -> None:
    # executescript would COMMIT the transaction it runs in: one statement at a time.
    for statement in _TABLES.split(";"):
        if statement.strip():
            conn.execute(statement)


def _has_meta(conn: sqlite3.Connection) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'")
    return row.fetchone() is not None


def _has_tables(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master").fetchone() is not None


def _meta(conn: sqlite3.Connection) -> dict[str, str]:
    return {key: value for key, value in conn.execute("SELECT key, value FROM meta")}


def _check_schema(path: Path, meta: dict[str, str]) -> None:
    if "tree" not in meta or "kernel" not in meta:
        raise RoadtestError(f"{path}: not a sweep results file (no tree or kernel recorded)")
    if meta.get("schema") != SCHEMA_VERSION:
        raise RoadtestError(
            f"{path}: results file of format {meta.get('schema')!r}, this roadtest reads "
            f"{SCHEMA_VERSION!r}: sweep again into a new file"
        )


# --- shards -----------------------------------------------------------------------------

T = TypeVar("T")

_SHARD = re.compile(r"([0-9]+)/([0-9]+)")


def parse_shard(spec: str) -> tuple[int, int]:
    """ "K/N" as (K, N): the Kth of N shards, 1 <= K <= N."""
    match = _SHARD.fullmatch(spec)
    if match is None:
        raise UsageError(f"--shard {spec!r}: expected K/N, the Kth of N shards (e.g. 2/4)")
    k, n = int(match.group(1)), int(match.group(2))
    if not 1 <= k <= n:
        raise UsageError(f"--shard {spec!r}: K must be from 1 to N (here {n}), as in 1/{n}")
    return k, n


def shard(drivers: Sequence[T], spec: str, key: Callable[[T], str]) -> list[T]:
    """The drivers of shard "K/N", in their order. A driver's shard is a hash of its key
    (its source path, and its bus unless I2C), not its position: adding or removing a
    driver moves no other, so shards of runs of slightly different trees still line up."""
    k, n = parse_shard(spec)
    return [d for d in drivers if _shard_of(key(d), n) == k - 1]


def _shard_of(key: str, n: int) -> int:
    # sha256, not hash(): the same on every machine and in every process.
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % n


# --- merge ------------------------------------------------------------------------------


def merge(sources: Sequence[Path], out: Path) -> int:
    """Join shards' results files into `out` (replaced if it exists; it may be one of the
    sources) and return how many drivers it holds. The sources must be of one tree; `out`
    says the first one's kernel. A driver in several sources is kept from the one with
    more distinct findings (a finding is what a sweep is for: one is never dropped), then
    with more progress (a later stage), then more examples; on a tie, from the first
    source given. `out` is written under a temporary name beside it and renamed: it is
    never half-written."""
    if not sources:
        raise UsageError("merge: no results files to merge")
    best: dict[tuple[str, str], DriverResult] = {}
    first = sources[0]
    tree = kernel = ""
    for path in sources:
        with ResultsDB.existing(path) as db:
            if path is first:
                tree, kernel = db.tree, db.kernel
            elif db.tree != tree:
                raise RoadtestError(
                    f"cannot merge {path} (tree {db.tree!r}) with {first} (tree {tree!r}): "
                    "not the same sweep"
                )
            for result in db.results():
                kept = best.get((result.source, result.bus))
                if kept is None or _rank(result) > _rank(kept):
                    best[(result.source, result.bus)] = result

    with replacing(out, companions=("-wal", "-shm")) as tmp:
        with ResultsDB.open(tmp, tree=tree, kernel=kernel) as db:
            for result in best.values():
                db.record(result)
        # Closing the last connection checkpointed the log into `tmp` and removed it: `tmp`
        # alone is the database. A stale log of the old `out` would be replayed onto the new
        # file: remove it before the rename, never after.
        for stale in (f"{out}-wal", f"{out}-shm"):
            Path(stale).unlink(missing_ok=True)
    return len(best)


def _rank(result: DriverResult) -> tuple[int, int, int]:
    signatures = {f.signature for f in result.findings}
    return (len(signatures), _STAGES.index(result.stage), result.examples)
