"""`roadtest trace show` and `roadtest trace diff` (in-process; one run as a user runs it)."""

from __future__ import annotations

import dataclasses
import math
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import lz4.frame
import msgpack
import pytest
from helpers import Result, Roadtest, cli_runner, deep_marker, raw_trace

from roadtest.trace.format import Header, TraceWriter, write_trace_atomic

ROADTEST = Path(sys.executable).with_name("roadtest")


@pytest.fixture
def roadtest(capsys: pytest.CaptureFixture[str]) -> Roadtest:
    return cli_runner(capsys)


def msgs_write(*data: int) -> list[dict[str, Any]]:
    return [{"flags": 0, "len": len(data), "data": bytes(data), "status": 0}]


def msgs_read(reg: int, value: int) -> list[dict[str, Any]]:
    return [
        {"flags": 1, "len": 1, "data": bytes([reg]), "status": 0},
        {"flags": 2, "len": 1, "data": bytes([value]), "status": 0},
    ]


FIELDS: dict[str, Any] = {
    "kernel": "6.12.57",
    "test": "tests/drivers/regulator/test_tps6286x.py::test_enable",
    "address": 0x48,
    "compatible": "ti,tps62864",
    "model": "roadtest.models.tps6286x:TPS6286x",
    "regbytes": 1,
}


def make(path: Path, controls: list[int], extra: int = 0, **changes: Any) -> Path:
    fields: dict[str, Any] = {**FIELDS, **changes}
    with TraceWriter(path, Header(**fields)) as writer:
        writer.event("marker", what="bind")
        for value in controls:
            writer.event("i2c", msgs=msgs_read(0x03, 0x6B))
            writer.event("i2c", msgs=msgs_write(0x03, value))
        for _ in range(extra):
            writer.event("irq", line=5, name="irq", level=1)
        writer.event("marker", what="unbind")
    return path


def test_show_prints_the_header_and_one_decoded_line_per_event(
    tmp_path: Path, roadtest: Roadtest
) -> None:
    path = make(tmp_path / "a.rtrace", [0x20, 0x30])
    result = roadtest("trace", "show", path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"# {path}: ti,tps62864 at i2c 0x48")
    events = [line for line in lines if not line.startswith("#")]
    assert len(events) == 6
    assert re.fullmatch(r"\s+0\s+0\.000 ms  marker bind", events[0])
    assert re.fullmatch(r"\s+1\s+\d+\.\d{3} ms  read CONTROL\(0x03\) -> 0x6b", events[1])
    assert events[2].endswith("  write CONTROL(0x03) = 0x20")
    assert events[5].endswith("  marker unbind")
    times = [float(line.split()[1]) for line in events]
    assert times == sorted(times)


def test_show_gives_the_guests_time_when_the_trace_has_it(
    tmp_path: Path, roadtest: Roadtest
) -> None:
    """A trace recorded under simulated time: the driver's 160 ms wait is 160 ms of guest
    time, whatever the host took for it (here: next to nothing)."""
    guest_ns = iter([2_500_000_000, 2_500_000_000 + 480_000, 2_660_000_000 + 480_000])
    path = tmp_path / "sim.rtrace"
    with TraceWriter(path, Header(**FIELDS), simulated_time=lambda: next(guest_ns)) as writer:
        writer.event("i2c", msgs=msgs_write(0x01, 0xC4))  # start a conversion
        writer.event("marker", what="note", detail="waits")
        writer.event("i2c", msgs=msgs_read(0x00, 0x12))  # its result, 160 ms later
    result = roadtest("trace", "show", path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[2] == (
        "# times: the guest's (simulated time), in ms since the first event "
        "(2.500000 s after the guest booted)"
    )
    times = [line.split()[1] for line in lines if not line.startswith("#")]
    assert times == ["0.000", "0.480", "160.480"]


def test_show_falls_back_to_the_hosts_time_and_says_so(tmp_path: Path, roadtest: Roadtest) -> None:
    path = tmp_path / "travel.rtrace"
    events = [
        {"t": 7_000_000, "kind": "marker", "what": "bind", "detail": None},
        {"t": 7_120_000, "kind": "i2c", "msgs": msgs_write(0x01, 0xC4)},
    ]
    write_trace_atomic(path, Header(**FIELDS), events)
    result = roadtest("trace", "show", path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[2] == (
        "# times: the host's (this trace has no guest time: it was not recorded under "
        "simulated time), in ms since the first event"
    )
    assert [line.split()[1] for line in lines[3:]] == ["0.000", "0.120"]


def test_show_of_a_trace_without_events_has_no_clock_line(
    tmp_path: Path, roadtest: Roadtest
) -> None:
    path = tmp_path / "empty.rtrace"
    write_trace_atomic(path, Header(**FIELDS), [])
    result = roadtest("trace", "show", path)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 2


def test_show_of_a_cut_trace_prints_what_it_can_then_fails_in_one_line(
    tmp_path: Path, roadtest: Roadtest
) -> None:
    path = make(tmp_path / "a.rtrace", [0x20, 0x30])
    cut = tmp_path / "cut.rtrace"
    cut.write_bytes(path.read_bytes()[:-30])
    result = roadtest("trace", "show", cut)
    assert result.returncode == 2
    assert "marker bind" in result.stdout
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"roadtest: {cut}: byte ") and "truncated" in result.stderr


def test_diff_of_identical_traces_is_zero(tmp_path: Path, roadtest: Roadtest) -> None:
    a = make(tmp_path / "a.rtrace", [0x20, 0x30])
    b = make(tmp_path / "b.rtrace", [0x20, 0x30], kernel="6.13")  # other times, other kernel
    result = roadtest("trace", "diff", a, b)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "identical: 6 events" in result.stdout
    assert "header: kernel '6.12.57' vs '6.13' (not compared)" in result.stdout


def test_diff_shows_the_first_difference_in_context_and_counts(
    tmp_path: Path, roadtest: Roadtest
) -> None:
    a = make(tmp_path / "a.rtrace", [0x20, 0x30, 0x40, 0x50])
    b = make(tmp_path / "b.rtrace", [0x20, 0x31, 0x40, 0x51])
    result = roadtest("trace", "diff", a, b)
    assert result.returncode == 1, result.stderr
    out = result.stdout.splitlines()
    first = out.index("first difference at event 4:")
    assert out[first + 2].endswith("  write CONTROL(0x03) = 0x20")  # context before
    assert re.fullmatch(r"-\s+4  write CONTROL\(0x03\) = 0x30", out[first + 4])
    assert re.fullmatch(r"\+\s+4  write CONTROL\(0x03\) = 0x31", out[first + 5])
    assert out[first + 6] == "    => write CONTROL(0x03) = 0x31, expected 0x30"
    assert out[first + 7].endswith("  read CONTROL(0x03) -> 0x6b")  # context after
    assert out[-1] == f"2 of 10 events differ ({a}: 10 events, {b}: 10)"


def test_diff_counts_events_only_one_trace_has(tmp_path: Path, roadtest: Roadtest) -> None:
    a = make(tmp_path / "a.rtrace", [0x20])
    b = make(tmp_path / "b.rtrace", [0x20], extra=2)
    result = roadtest("trace", "diff", a, b)
    assert result.returncode == 1
    assert re.search(r"-\s+3  marker unbind\n\+\s+3  irq irq\(5\) level 1", result.stdout)
    assert re.search(rf"-\s+5  \(end of {re.escape(str(a))}\)", result.stdout)
    assert result.stdout.splitlines()[-1] == f"3 of 6 events differ ({a}: 4 events, {b}: 6)"


def test_diff_of_another_device_differs(tmp_path: Path, roadtest: Roadtest) -> None:
    a = make(tmp_path / "a.rtrace", [0x20])
    b = make(tmp_path / "b.rtrace", [0x20], compatible="ti,tps62866")
    result = roadtest("trace", "diff", a, b)
    assert result.returncode == 1
    assert "header: compatible 'ti,tps62864' vs 'ti,tps62866'" in result.stdout


def test_diff_shows_but_does_not_compare_the_address(tmp_path: Path, roadtest: Roadtest) -> None:
    # The session assigns addresses per run: the same device may sit elsewhere.
    a = make(tmp_path / "a.rtrace", [0x20])
    b = make(tmp_path / "b.rtrace", [0x20], address=0x49)
    result = roadtest("trace", "diff", a, b)
    assert result.returncode == 0
    assert "header: address 0x48 vs 0x49 (not compared)" in result.stdout


@pytest.mark.parametrize("command", ["show", "diff"])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, command: str, roadtest: Roadtest) -> None:
    good = make(tmp_path / "good.rtrace", [0x20])
    bad = tmp_path / "bad.rtrace"
    bad.write_text("not a trace\n")
    for args in ([bad], [tmp_path / "missing.rtrace"]):
        if command == "diff":
            args = [good, *args]
        result = roadtest("trace", command, *args)
        assert result.returncode == 2, result
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
        assert result.stderr.startswith("roadtest: ")
    result = roadtest("trace", command, bad, *([good] if command == "diff" else []))
    assert "not an lz4 frame: is this a roadtest trace?" in result.stderr


def test_as_a_user_runs_it_errors_are_one_line_and_a_closed_pipe_is_quiet(
    tmp_path: Path,
) -> None:
    path = make(tmp_path / "a.rtrace", [0x20] * 2000)
    # `roadtest trace show PATH | head -1`, without a shell: head exits after one line.
    show = subprocess.Popen(
        [ROADTEST, "trace", "show", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert show.stdout is not None and show.stderr is not None
    head = subprocess.run(["head", "-1"], stdin=show.stdout, capture_output=True, text=True)
    show.stdout.close()
    stderr = show.stderr.read().decode()
    show.wait()
    assert head.stdout.startswith("# ") and stderr == ""
    cut = tmp_path / "cut.rtrace"
    cut.write_bytes(path.read_bytes()[:-30])
    result = subprocess.run(
        [ROADTEST, "trace", "diff", path, cut], capture_output=True, text=True, check=False
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"roadtest: {cut}: byte ") and "truncated" in result.stderr


# Hostile or damaged input: one line and exit 2, or a readable result; never a traceback
# or a hang (the hardening issue, item 9 and 12).

HEADER = Header(
    kernel="6.12.57",
    test="tests/drivers/regulator/test_tps6286x.py::test_enable",
    address=0x48,
    compatible="ti,tps62864",
    model="roadtest.models.tps6286x:TPS6286x",
    regbytes=1,
)


def one_line(result: Result | subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.startswith("roadtest: ")
    return result.stderr


@pytest.mark.parametrize("command", ["show", "diff"])
def test_a_fifo_is_refused_not_waited_on(tmp_path: Path, command: str) -> None:
    fifo = tmp_path / "pipe.rtrace"
    os.mkfifo(fifo)
    good = make(tmp_path / "good.rtrace", [0x20])
    args = [fifo] if command == "show" else [good, fifo]
    # A subprocess: before the fix, open() waited for a writer forever.
    result = subprocess.run(
        [ROADTEST, "trace", command, *args], capture_output=True, text=True, timeout=60
    )
    assert f"{fifo}: not a regular file" in one_line(result)


@pytest.mark.parametrize(
    "created",
    [math.inf, -math.inf, math.nan, 1e20, 2**63, -(2**63), 253402300800.0],
    ids=["inf", "-inf", "nan", "1e20", "2**63", "-2**63", "year-10000"],
)
def test_a_creation_time_that_is_no_date_is_shown_as_a_number(
    tmp_path: Path, roadtest: Roadtest, created: float
) -> None:
    path = raw_trace(tmp_path / "a.rtrace", dataclasses.replace(HEADER, created=0.0))
    header = msgpack.unpackb(lz4.frame.decompress(path.read_bytes()))
    header["created"] = created
    path.write_bytes(lz4.frame.compress(msgpack.packb(header)))
    result = roadtest("trace", "show", path)
    assert result.returncode == 0, result.stderr
    assert "(not a date)" in result.stdout.splitlines()[1]


def test_a_detail_nested_1000_deep_is_one_line(tmp_path: Path, roadtest: Roadtest) -> None:
    path = raw_trace(tmp_path / "deep.rtrace", HEADER, deep_marker(1000))
    good = make(tmp_path / "good.rtrace", [0x20])
    for args in (["show", path], ["diff", good, path], ["diff", path, path]):
        assert "nests more than" in one_line(roadtest("trace", *args))


@pytest.mark.parametrize("op", [["set_value"], {"op": 1}, 5, None])
def test_a_gpio_op_of_another_type_is_one_line(
    tmp_path: Path, roadtest: Roadtest, op: object
) -> None:
    gpio = {"kind": "gpio", "line": 1, "name": "irq", "op": op, "value": 0, "status": 0}
    path = raw_trace(tmp_path / "op.rtrace", HEADER, gpio)
    assert "unknown op" in one_line(roadtest("trace", "show", path))


def test_terminal_escapes_in_a_trace_are_shown_escaped(tmp_path: Path, roadtest: Roadtest) -> None:
    evil = "\x1b]0;owned\x07\x1b[2J\u202e"
    header = dataclasses.replace(
        HEADER, kernel=evil, test=f"t{evil}", compatible=evil, extra={evil: evil}
    )
    marker = {"kind": "marker", "what": evil, "detail": {evil: evil}}
    gpio = {"kind": "gpio", "line": 1, "name": evil, "op": "mask", "value": 0, "status": 0}
    path = raw_trace(tmp_path / "esc.rtrace", header, marker, gpio)
    other = raw_trace(tmp_path / "other.rtrace", HEADER, gpio, marker)
    for args in (["show", path], ["diff", path, other], ["diff", other, path]):
        result = roadtest("trace", *args)
        assert result.returncode in (0, 1), result.stderr
        assert "\x1b" not in result.stdout and "\u202e" not in result.stdout
        assert "\\x1b" in result.stdout
    bad = raw_trace(tmp_path / "bad.rtrace", header, {**gpio, "op": evil})
    assert "\x1b" not in one_line(roadtest("trace", "show", bad))


def test_a_diff_line_of_a_huge_transfer_is_cut(tmp_path: Path, roadtest: Roadtest) -> None:
    msgs = [{"flags": 0, "len": 1, "data": b"\x01", "status": 0}] * 65536
    a = raw_trace(tmp_path / "a.rtrace", HEADER, {"kind": "i2c", "msgs": msgs})
    b = raw_trace(tmp_path / "b.rtrace", HEADER, {"kind": "i2c", "msgs": msgs[:-1]})
    result = roadtest("trace", "diff", a, b)
    assert result.returncode == 1
    assert "characters left out" in result.stdout
    assert max(map(len, result.stdout.splitlines())) < 3000
