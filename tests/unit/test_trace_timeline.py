"""`roadtest trace show --timeline` and `trace diff --timeline`: a trace's events on a time
axis, each in the column of its time (columns = width - 15, the lane names' room)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import Roadtest, cli_runner

from roadtest.trace.format import Header, write_trace_atomic

WIDTH = 15 + 100  # 100 columns: one per 10 us of a trace 1 ms long


@pytest.fixture
def roadtest(capsys: pytest.CaptureFixture[str]) -> Roadtest:
    return cli_runner(capsys)


def at(us: int, kind: str, **fields: Any) -> dict[str, Any]:
    return {"kind": kind, "t": 0, "sim": 1_000_000 + us * 1000, **fields}


def i2c(us: int, *msgs: tuple[int, bytes, int]) -> dict[str, Any]:
    return at(
        us, "i2c", msgs=[{"flags": f, "len": len(d), "data": d, "status": s} for f, d, s in msgs]
    )


def trace(path: Path, *events: dict[str, Any]) -> Path:
    header = Header(kernel="6.12", test="tests/x.py::test_x", address=0x48, compatible="x,y")
    write_trace_atomic(path, header, events)
    return path


def lanes(out: str) -> dict[str, str]:
    """Each lane's cells by its name."""
    rows = [line for line in out.splitlines() if not line.startswith("#")]
    return {row[:14].strip(): row[15:] for row in rows if row[:14].strip()}


EVENTS = (
    at(0, "marker", what="bind", detail=None),
    i2c(100, (0, b"\x01", 0), (2, b"\x60\xa0", 0)),  # a register read
    i2c(300, (0, b"\x01\x62", 0)),  # a write
    at(300, "gpio", line=0, name="irq", op="unmask", value=0, status=0),
    at(500, "irq", line=0, name="irq", level=0),
    i2c(502, (2, b"\x00", 0)),
    i2c(505, (2, b"\x00", 0)),
    i2c(507, (2, b"\x00", 0)),
    at(700, "irq", line=0, name="irq", level=1),
    i2c(800, (0, b"\x05", 1)),  # refused
    at(1000, "marker", what="unbind", detail=None),
)


def test_each_event_in_the_column_of_its_time(tmp_path: Path, roadtest: Roadtest) -> None:
    path = trace(tmp_path / "t.rtrace", *EVENTS)
    result = roadtest("trace", "show", "--timeline", "--width", str(WIDTH), path)
    assert result.returncode == 0
    lane = lanes(result.stdout)
    bus = lane["i2c 0x48"]
    assert {i: c for i, c in enumerate(bus) if c != " "} == {10: "r", 30: "w", 50: "3", 80: "E"}
    assert lane["irq"][:50].strip() == "" and lane["irq"][50] == "_"
    assert (
        lane["irq"][51:70] == "_" * 19 and lane["irq"][70] == "/" and lane["irq"][71:] == "-" * 29
    )
    assert lane["irq req"].index("u") == 30
    assert {i: c for i, c in enumerate(lane["test"]) if c != " "} == {0: "B", 99: "U"}
    assert "one column: 0.01 ms of the guest's (simulated) time" in result.stdout
    assert lane["ms"].split() == [f"{tick / 10:.1g}" for tick in range(10)]


def test_diff_points_at_the_first_difference(tmp_path: Path, roadtest: Roadtest) -> None:
    a = trace(tmp_path / "a.rtrace", *EVENTS)
    changed = list(EVENTS)
    changed[2] = i2c(300, (0, b"\x01\x63", 0))
    b = trace(tmp_path / "b.rtrace", *changed)
    result = roadtest("trace", "diff", "--timeline", "--width", str(WIDTH), a, b)
    assert result.returncode == 1
    pointers = [line for line in result.stdout.splitlines() if "^" in line]
    assert [line.index("^") - 15 for line in pointers] == [30, 30]
    assert result.stdout.endswith("first difference at event 2\n")
    same = roadtest("trace", "diff", "--timeline", a, a)
    assert same.returncode == 0 and same.stdout.endswith("identical\n")
