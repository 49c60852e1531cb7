"""What `roadtest replay` learns from the pytest run it starts: a JSON line per trace played
(`TraceResult`) and per test that failed or was skipped, in DIR/<pid>.jsonl (one file per
process, so that xdist workers never share one)."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class TraceResult:
    """How one trace's replay went."""

    path: str
    test: str
    transfers: int
    consumed: int = 0
    failure: str = ""  # one line; empty when the replay matched
    tolerated: int = 0  # repeated reads made once more or once less than recorded
    damaged: bool = False  # the failure is the trace's: it could not be read to its end
    kernel: str = ""  # the release of the kernel it was played against
    tolerated_unmasks: int = 0  # interrupt unmasks made once more or once less


@dataclass
class Results:
    traces: dict[str, TraceResult]  # by trace path
    failed_tests: dict[str, str]  # test id -> its failure's headline
    # test id -> why it was skipped (a test this machine cannot run: SPI on x86_64)
    skipped_tests: dict[str, str] = field(default_factory=dict)


def _append(directory: Path, entry: dict[str, Any]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / f"{os.getpid()}.jsonl").open("a") as f:
        f.write(json.dumps(entry) + "\n")


def add_trace(directory: Path, result: TraceResult) -> None:
    _append(directory, {"trace": asdict(result)})


def add_failed_test(directory: Path, test_id: str, headline: str) -> None:
    """`test_id` failed (in its setup, call or teardown) with `headline`; the first one stays."""
    _append(directory, {"failed": test_id, "headline": headline})


def add_skipped_test(directory: Path, test_id: str, reason: str) -> None:
    """`test_id` was skipped, for `reason`."""
    _append(directory, {"skipped": test_id, "reason": reason})


def read_results(directory: Path) -> Results:
    results = Results({}, {})
    for path in sorted(directory.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            if "trace" in entry:
                result = TraceResult(**entry["trace"])
                results.traces[result.path] = result
            elif "skipped" in entry:
                results.skipped_tests.setdefault(entry["skipped"], entry["reason"])
            else:
                results.failed_tests.setdefault(entry["failed"], entry["headline"])
    return results
