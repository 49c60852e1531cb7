"""`roadtest import sigrok` on buses drawn by hand (i2c_wire.py), decoded by sigrok-cli.

Each expected trace is what the drawn bus carries by the I2C-bus specification (UM10204):
which messages a repeated START joins, which one a NACK failed, which bytes. sigrok-cli
must be installed (`make setup` installs it): without it these tests fail, they do not skip.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import Roadtest, cli_runner
from i2c_wire import Wire, fast_mode, standard_mode

from roadtest.recorder.sigrok import SigrokError, read_capture
from roadtest.trace.format import load_trace

TEST = "tests/drivers/hwmon/test_tmp102.py::test_limits"
I2C_FAIL_NEXT, I2C_M_RD = 1 << 0, 1 << 1  # virtio-i2c's message flags


@pytest.fixture
def roadtest(capsys: pytest.CaptureFixture[str]) -> Roadtest:
    return cli_runner(capsys)


def msgs(events: list[dict[str, Any]]) -> list[list[tuple[int, bytes, int]]]:
    return [[(m["flags"], m["data"], m["status"]) for m in e["msgs"]] for e in events]


def dump(tmp_path: Path, wire: Wire, **kwargs: Any) -> Path:
    path = tmp_path / "bus.vcd"
    wire.write_vcd(path, **kwargs)
    return path


def register_read(wire: Wire, addr: int, reg: int, value: bytes) -> None:
    wire.transfer(addr, [(False, bytes([reg]), True), (True, value, True)])


def test_a_repeated_start_joins_the_messages_of_one_transfer(tmp_path: Path) -> None:
    wire = standard_mode()
    register_read(wire, 0x48, 0x01, b"\x60\xa0")
    wire.idle(50_000)
    wire.transfer(0x48, [(False, b"\x01\x62\xb0", True)])
    found = read_capture(dump(tmp_path, wire))
    assert msgs(found.events[0x48]) == [
        [(I2C_FAIL_NEXT, b"\x01", 0), (I2C_FAIL_NEXT * 0 | I2C_M_RD, b"\x60\xa0", 0)],
        [(0, b"\x01\x62\xb0", 0)],
    ]
    first, second = found.events[0x48]
    # The START of the first at 10 us, of the second after the first's STOP and 50 us idle.
    assert first["t"] == 10_000
    assert second["t"] > first["t"] + 50_000


def test_a_nacked_address_fails_its_message_and_the_master_stops(tmp_path: Path) -> None:
    wire = fast_mode()
    wire.transfer(0x77, [(False, b"\x00", False)])  # nobody at 0x77
    wire.idle(20_000)
    wire.transfer(0x50, [(False, b"\x10", True), (True, b"", False)])  # the read refused
    found = read_capture(dump(tmp_path, wire))
    assert msgs(found.events[0x77]) == [[(0, b"", 1)]]
    assert msgs(found.events[0x50]) == [[(I2C_FAIL_NEXT, b"\x10", 0), (I2C_M_RD, b"", 1)]]


def test_a_nacked_data_byte_fails_the_write_with_the_bytes_the_wire_carried(
    tmp_path: Path,
) -> None:
    wire = standard_mode()
    wire.start()
    wire.byte(0x50 << 1)
    wire.byte(0x10)
    wire.byte(0xFF, ack=False)  # the target refuses the second byte
    wire.stop()
    found = read_capture(dump(tmp_path, wire))
    assert msgs(found.events[0x50]) == [[(0, b"\x10\xff", 1)]]


def test_one_transfer_to_two_devices_is_an_event_of_each(tmp_path: Path) -> None:
    wire = standard_mode()
    wire.start()
    wire.byte(0x50 << 1)
    wire.byte(0x00)
    wire.restart()
    wire.byte(0x51 << 1 | 1)
    wire.byte(0xAB, ack=False)
    wire.stop()
    found = read_capture(dump(tmp_path, wire))
    assert msgs(found.events[0x50]) == [[(0, b"\x00", 0)]]
    assert msgs(found.events[0x51]) == [[(I2C_M_RD, b"\xab", 0)]]


def test_a_ten_bit_address(tmp_path: Path) -> None:
    # UM10204 3.1.11: 11110 and the address's two top bits, R/W 0, then its low byte; a
    # read repeats the first byte with R/W 1 after a repeated START.
    wire = standard_mode()
    wire.start()
    wire.byte(0b11110_10_0)
    wire.byte(0x34)
    wire.byte(0x07)  # a write of one byte to 0x234
    wire.stop()
    wire.start()
    wire.byte(0b11110_10_0)
    wire.byte(0x34)
    wire.restart()
    wire.byte(0b11110_10_1)
    wire.byte(0x99, ack=False)  # one byte read from 0x234
    wire.stop()
    found = read_capture(dump(tmp_path, wire))
    assert msgs(found.events[0x234]) == [[(0, b"\x07", 0)], [(I2C_M_RD, b"\x99", 0)]]


def test_a_stretched_clock_and_jitter_decode_the_same(tmp_path: Path) -> None:
    wire = Wire(low_ns=5000, high_ns=4500, jitter_ns=700, seed=7)
    wire.start()
    wire.byte(0x48 << 1)
    wire.byte(0x03, stretch_ns=40_000)  # the target holds SCL low for 40 us
    wire.stop()
    assert msgs(read_capture(dump(tmp_path, wire)).events[0x48]) == [[(0, b"\x03", 0)]]


@pytest.mark.parametrize("make", [standard_mode, fast_mode])
@pytest.mark.parametrize("line", [0, 1])
def test_spikes_shorter_than_50_ns_are_filtered_as_a_device_does(
    tmp_path: Path, make: Any, line: int
) -> None:
    wire = make()
    register_read(wire, 0x48, 0x01, b"\x60\xa0")
    # Spikes at every SCL rise and fall and in every SCL high of the transfer: on SDA while
    # SCL is high each would be a START or a STOP, on SCL each an extra clock.
    edges = [when for when, changed, _ in list(wire.changes) if changed == 0]
    for a, b in zip(edges, edges[1:], strict=False):
        wire.glitch(line, (a + b) // 2, 45)  # UM10204 tSP: 0 to 50 ns are suppressed
    found = read_capture(dump(tmp_path, wire))
    assert msgs(found.events[0x48]) == [[(I2C_FAIL_NEXT, b"\x01", 0), (I2C_M_RD, b"\x60\xa0", 0)]]


def high_of_bit(wire: Wire, clock: int) -> int:
    """The middle of SCL's `clock`th high phase."""
    rises = [w for w, line, v in wire.changes if line == 0 and v == 1]
    falls = [w for w, line, v in wire.changes if line == 0 and v == 0]
    rise = rises[clock]
    fall = next(f for f in falls if f > rise)
    return (rise + fall) // 2


def test_a_glitch_wider_than_the_filter_is_an_error_and_nothing_is_written(
    tmp_path: Path, roadtest: Roadtest
) -> None:
    wire = standard_mode()
    register_read(wire, 0x48, 0x01, b"\x60\xa0")
    wire.glitch(1, high_of_bit(wire, 12), 200)  # SDA low then high in a data bit: START, STOP
    capture = dump(tmp_path, wire)
    out = tmp_path / "golden"
    result = roadtest(
        "import", "sigrok", capture, "--compatible", "ti,tmp102", "--test", TEST, "--out", out
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "a glitch on the bus" in result.stderr or "acknowledge" in result.stderr
    assert not out.exists()


def test_an_extra_clock_is_an_error(tmp_path: Path) -> None:
    wire = standard_mode()
    wire.transfer(0x48, [(False, b"\x01\x02", True)])
    # SCL low for 300 ns in the middle of a high phase: a ninth bit to the byte.
    wire.glitch(0, high_of_bit(wire, 12), 300)
    with pytest.raises(SigrokError, match="SCL clocks where"):
        read_capture(dump(tmp_path, wire))


def test_a_missing_channel(tmp_path: Path) -> None:
    wire = standard_mode()
    register_read(wire, 0x48, 0x01, b"\x60\xa0")
    capture = dump(tmp_path, wire, names=("D0", "D1"))
    assert msgs(read_capture(capture).events[0x48])  # D0 and D1 by default
    with pytest.raises(SigrokError, match=r"no channel D3 for SDA \(its channels: D0, D1\)"):
        read_capture(capture, scl="D0", sda="D3")
    other = dump(tmp_path, wire, names=("A", "B"))
    with pytest.raises(SigrokError, match="--channels scl=NAME,sda=NAME"):
        read_capture(other)
    assert msgs(read_capture(other, scl="A", sda="B").events[0x48])


def test_swapped_channels_do_not_decode(tmp_path: Path) -> None:
    wire = standard_mode()
    for _ in range(3):
        register_read(wire, 0x48, 0x01, b"\x60\xa0")
    capture = dump(tmp_path, wire)
    with pytest.raises(SigrokError, match="a glitch on the bus|never idles|acknowledge"):
        read_capture(capture, scl="SDA", sda="SCL")


def test_a_bus_that_never_idles(tmp_path: Path) -> None:
    wire = standard_mode()
    wire.start()
    wire.byte(0x48 << 1 | 1)
    for _ in range(50):
        wire.byte(0x55)  # a read that outlasts the capture
    with pytest.raises(SigrokError, match="the bus never idles: no STOP in the capture"):
        read_capture(dump(tmp_path, wire))


def test_a_line_held_low(tmp_path: Path) -> None:
    capture = tmp_path / "held.vcd"  # a target holds SDA low for the whole capture
    capture.write_text(
        "$timescale 1 us $end $var wire 1 ! SCL $end $var wire 1 # SDA $end $enddefinitions $end\n"
        "#0 1! 0# #5 0! #10 1! #15 0! #20 1! #100\n"
    )
    with pytest.raises(SigrokError, match="SDA is never high: is it the right channel"):
        read_capture(capture)


def test_transfers_cut_off_by_the_capture_are_left_out_and_counted(tmp_path: Path) -> None:
    wire = standard_mode()
    register_read(wire, 0x48, 0x01, b"\x60\xa0")
    wire.idle(30_000)
    wire.start()
    wire.byte(0x48 << 1)  # the capture ends here
    whole = read_capture(dump(tmp_path, wire))
    assert len(whole.events[0x48]) == 1 and whole.incomplete == 1


def test_several_devices_need_addr_and_the_trace_lands_where_replay_finds_it(
    tmp_path: Path, roadtest: Roadtest
) -> None:
    wire = fast_mode()
    register_read(wire, 0x48, 0x01, b"\x60\xa0")
    wire.transfer(0x50, [(False, b"\x00", True)])
    capture = dump(tmp_path, wire)
    out = tmp_path / "golden"
    args = ["import", "sigrok", capture, "--compatible", "ti,tmp102", "--test", TEST]
    result = roadtest(*args, "--out", out)
    assert result.returncode == 2
    assert "devices at 0x48 (1 transfer), 0x50 (1 transfer): choose one with --addr" in (
        result.stderr
    )
    result = roadtest(
        *args,
        "--addr",
        "0x48",
        "--model",
        "roadtest.models.tmp102:TMP102",
        "--device",
        "test_tmp102.SENSOR",
        "--out",
        out,
    )
    assert result.returncode == 0, result.stderr
    header, events = load_trace(out / "tmp102" / "test_limits.rtrace")
    assert (header.address, header.model, header.regbytes, header.byteorder) == (
        0x48,
        "",
        2,
        "big",
    )
    assert header.extra["source"] == "sigrok" and header.extra["device"] == "test_tmp102.SENSOR"
    assert msgs(events) == [[(I2C_FAIL_NEXT, b"\x01", 0), (I2C_M_RD, b"\x60\xa0", 0)]]
    assert sorted(p.name for p in (out / "tmp102").iterdir()) == ["test_limits.rtrace"]


def test_a_killed_import_leaves_the_old_trace_or_the_whole_new_one(tmp_path: Path) -> None:
    # A capture big enough that an import is still at work at the first kills.
    wire = standard_mode(jitter_ns=0)
    for n in range(400):
        register_read(wire, 0x48, n & 0xFF, b"\x60\xa0")
    capture = dump(tmp_path, wire)
    out = tmp_path / "old.rtrace"
    for delay in (0.05, 0.2, 0.5, 1.0):
        out.write_bytes(b"the old trace")
        proc = subprocess.Popen(
            [sys.executable, "-m", "roadtest", "import", "sigrok", str(capture)]
            + ["--compatible", "ti,tmp102", "--test", TEST, "--out", str(out)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        if out.read_bytes() != b"the old trace":
            assert len(load_trace(out)[1]) == 400  # complete, or not there at all
