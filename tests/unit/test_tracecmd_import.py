"""`roadtest import trace-cmd` on a real `trace-cmd report`, and replay of what it makes.

tests/unit/data/tracecmd-report.txt is a real capture (made by
capture_tracecmd_report.py there): the opt3001 driver at 0x44 (probe, one lux
reading with result 0x3456, remove), then I2C_RDWR transfers to register models
at 0x50 and 0x51 and to 0x77, where nothing answers. Variants of it (a second
adapter, damaged lines) are made here from its lines.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import Result, Roadtest, cli_runner, serve

from roadtest.backend.i2c import I2CBus
from roadtest.models.base import ModelError
from roadtest.models.opt3001 import OPT3001
from roadtest.recorder.tracecmd import TraceCmdError, import_trace_cmd, read_capture
from roadtest.replayer.player import ReplayError, ReplayHooks
from roadtest.trace.decode import Decoder
from roadtest.trace.format import load_trace
from roadtest.trace.names import TracedDevice

REPORT = Path(__file__).parent / "data" / "tracecmd-report.txt"
LINES = REPORT.read_text().splitlines(keepends=True)
TEST = "tests/drivers/iio/light/test_opt3001.py::test_illuminance"
ROADTEST = Path(sys.executable).with_name("roadtest")
# virtio-i2c message flags as recorded (include/uapi/linux/virtio_i2c.h)
I2C_FAIL_NEXT, I2C_M_RD = 1 << 0, 1 << 1
W, R = 0, I2C_M_RD


@pytest.fixture
def roadtest(capsys: pytest.CaptureFixture[str]) -> Roadtest:
    return cli_runner(capsys)


def variant(tmp_path: Path, lines: list[str], name: str = "variant.txt") -> Path:
    path = tmp_path / name
    path.write_text("".join(lines))
    return path


def msgs(event: dict[str, Any]) -> list[tuple[int, bytes, int]]:
    return [(m["flags"], m["data"], m["status"]) for m in event["msgs"]]


def import_args(source: Path, out: Path, addr: str = "0x44", *more: str) -> list[str | Path]:
    return [
        "import",
        "trace-cmd",
        "--input",
        source,
        "--addr",
        addr,
        "--compatible",
        "ti,opt3001",
        "--test",
        TEST,
        "-o",
        out,
        *more,
    ]


def assert_one_line_error(result: Result, *parts: str) -> None:
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("roadtest: "), lines[0]
    for part in parts:
        assert part in lines[0], lines[0]


# What the import makes


def test_the_drivers_transfers_become_one_event_each(tmp_path: Path, roadtest: Roadtest) -> None:
    out = tmp_path / "golden" / "opt3001" / "test_illuminance.rtrace"
    result = roadtest(*import_args(REPORT, out))
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"imported 12 transfers of i2c-0 address 0x44 into {out}\n"
    header, events = load_trace(out)
    assert (header.test, header.address, header.compatible, header.bus) == (
        TEST,
        0x44,
        "ti,opt3001",
        "i2c",
    )
    assert header.model == "" and header.regbytes == 0 and header.kernel == ""
    assert header.extra == {"source": "trace-cmd", "adapter": 0}
    assert [e["kind"] for e in events] == ["i2c"] * 12
    # Probe: MANUFACTURER_ID read as one write + read transfer, then a lone write.
    assert msgs(events[0]) == [(W | I2C_FAIL_NEXT, b"\x7e", 0), (R, b"\x54\x49", 0)]
    assert msgs(events[3]) == [(W, b"\x01\xc8\x10", 0)]
    assert msgs(events[9]) == [(W | I2C_FAIL_NEXT, b"\x00", 0), (R, b"\x34\x56", 0)]  # RESULT
    assert [m["len"] for m in events[9]["msgs"]] == [1, 2]
    # The transfer's first timestamp, in ns (the report has microseconds).
    assert events[0]["t"] == 965_170_000_000 and events[-1]["t"] == 1_126_020_000_000
    assert [e["t"] for e in events] == sorted(e["t"] for e in events)


def test_three_messages_long_data_zero_length_and_a_shared_transfer(tmp_path: Path) -> None:
    out = tmp_path / "regs.rtrace"
    import_trace_cmd(REPORT, out, addr=0x50, compatible="roadtest,regs", test=TEST)
    _, events = load_trace(out)
    assert len(events) == 7
    assert msgs(events[1]) == [
        (W | I2C_FAIL_NEXT, b"\x20", 0),
        (R | I2C_FAIL_NEXT, b"\x7a", 0),
        (R, b"\x7a\x7b", 0),
    ]
    # Longer than the 64 bytes the kernel's own trace file would show.
    assert msgs(events[2]) == [(W, b"\x00" + bytes(range(0x80, 0xD0)), 0)]
    assert events[3]["msgs"][1]["len"] == 70
    assert events[3]["msgs"][1]["data"] == bytes(range(0x80, 0xC6))
    assert events[4]["msgs"] == [{"flags": W, "len": 0, "data": b"", "status": 0}]
    assert msgs(events[5]) == [(R, b"\x80\x81", 0)]
    # The transfer that went on to read 0x51: only 0x50's message, as the recorder keeps it.
    assert msgs(events[6]) == [(W, b"\x30", 0)]


def test_failed_transfers_fail_from_the_message_the_adapter_stopped_at(tmp_path: Path) -> None:
    out = tmp_path / "refusing.rtrace"
    import_trace_cmd(REPORT, out, addr=0x51, compatible="roadtest,refusing", test=TEST)
    _, events = load_trace(out)
    assert msgs(events[0]) == [(R, b"\x00", 0)]  # 0x51's part of the shared transfer
    # ret=1 of 2: the register write went through, the read was refused.
    assert msgs(events[1]) == [(W | I2C_FAIL_NEXT, b"\xf0", 0), (R, b"", 1)]
    assert events[1]["msgs"][1]["len"] == 1
    import_trace_cmd(REPORT, out, addr=0x77, compatible="roadtest,none", test=TEST)
    _, events = load_trace(out)
    # Nothing answered: ret=0, no message was carried out.
    assert msgs(events[0]) == [(W | I2C_FAIL_NEXT, b"\x00", 1), (R, b"", 1)]


def test_a_transfer_that_failed_part_way_replays(tmp_path: Path) -> None:
    out = tmp_path / "golden" / "refusing" / "board.rtrace"
    import_trace_cmd(REPORT, out, addr=0x51, compatible="roadtest,refusing", test=TEST)
    _, events = load_trace(out)
    hooks = ReplayHooks(tmp_path / "golden")
    dev = TracedDevice("roadtest,refusing", 0x51, "test_x.REFUSING")
    bus, _ = attach(hooks, dev)
    assert serve(bus, 0x51, 1) == ([(0, b"\x00")], [])
    # The board's device took the register write and refused the read: so does replay.
    assert serve(bus, 0x51, b"\xf0", 1) == ([(0, b"\xf0"), (1, b"")], [])
    assert hooks.detached(dev) == []
    assert hooks.outcomes[0].consumed == len(events) == 2


def test_a_negative_ret_fails_every_message(tmp_path: Path) -> None:
    lines = damaged(4, "ret=2", "ret=-121")  # -EREMOTEIO: which message failed is not known
    capture = read_capture(variant(tmp_path, lines), 0x44)
    assert msgs(capture.events[0][0]) == [(W | I2C_FAIL_NEXT, b"\x7e", 1), (R, b"", 1)]
    assert msgs(capture.events[0][1])[1] == (R, b"\x30\x01", 0)


def test_the_model_names_registers_but_the_trace_has_no_model(
    tmp_path: Path, roadtest: Roadtest
) -> None:
    out = tmp_path / "t.rtrace"
    model = "roadtest.models.opt3001:OPT3001"
    result = roadtest(*import_args(REPORT, out, "0x44", "--model", model, "--device", "m.SENSOR"))
    assert result.returncode == 0, result.stderr
    header, events = load_trace(out)
    assert header.model == "" and header.extra["registers"] == model
    assert header.extra["device"] == "m.SENSOR"
    assert (header.regbytes, header.byteorder) == (2, "big")  # the model's
    decoder = Decoder(header)
    assert decoder.describe(events[0]) == "read MANUFACTURER_ID(0x7e) -> 0x5449"
    assert decoder.describe(events[9]) == "read RESULT(0x00) -> 0x3456"
    result = roadtest(*import_args(REPORT, out, "0x44", "--model", model, "--regbytes", "1"))
    assert result.returncode == 0, result.stderr
    header, _ = load_trace(out)
    assert header.regbytes == 1


def test_the_kernel_release_comes_from_a_uname_line(tmp_path: Path) -> None:
    uname = ["cpus=1\n", "Linux (none) 6.12.118-roadtest x86_64\n", "3.1.6 not-a-git-repo\n"]
    capture = read_capture(variant(tmp_path, uname + LINES), 0x44)
    assert capture.kernel == "6.12.118-roadtest" and len(capture.events[0]) == 12


def test_other_events_and_other_lines_are_skipped(tmp_path: Path) -> None:
    noise = [
        "CPU 1 is empty\n",
        "      kworker/0:1-12    [001]   965.170001: sched_switch:  prev=kworker/0:1 next=x\n",
        "   python3-21  [000]  965.170002: smbus_write:  i2c-0 a=050 f=0000 c=10 BYTE_DATA l=1\n",
        "anything else a report may hold\n",
        "\n",
    ]
    lines = LINES[:3] + noise + LINES[3:]
    plain = read_capture(REPORT, 0x44).events
    assert read_capture(variant(tmp_path, lines), 0x44).events == plain


def test_transfers_cut_off_by_the_capture_are_left_out(tmp_path: Path, roadtest: Roadtest) -> None:
    # It begins after the first transfer's messages and ends before the last one's result.
    lines = LINES[:1] + LINES[3:-1]
    source = variant(tmp_path, lines)
    capture = read_capture(source, 0x44)
    assert capture.incomplete == 2 and len(capture.events[0]) == 11
    assert msgs(capture.events[0][0])[0] == (W | I2C_FAIL_NEXT, b"\x7f", 0)
    result = roadtest(*import_args(source, tmp_path / "t.rtrace"))
    assert result.returncode == 0
    assert "(left out 2 transfers cut off by the capture's start or end)" in result.stdout
    result = roadtest(*import_args(source, tmp_path / "t.rtrace", "0x77"))
    assert_one_line_error(result, "no i2c events for address 0x77")


# Adapters


def on_adapter(lines: list[str], n: int) -> list[str]:
    return [line.replace(" i2c-0 ", f" i2c-{n} ") for line in lines]


def test_interleaved_adapters_are_grouped_apart(tmp_path: Path) -> None:
    # The same capture on i2c-0 and i2c-1, line by line interleaved (as two CPUs would).
    events = LINES[1:]
    pairs = zip(events, on_adapter(events, 1), strict=True)
    mixed = LINES[:1] + [line for pair in pairs for line in pair]
    capture = read_capture(variant(tmp_path, mixed), 0x44)
    assert sorted(capture.events) == [0, 1]
    assert capture.events[0] == capture.events[1] == read_capture(REPORT, 0x44).events[0]


def test_the_adapter_is_the_only_one_with_traffic_or_chosen(
    tmp_path: Path, roadtest: Roadtest
) -> None:
    # 0x44 on i2c-0, 0x50 and 0x51 on i2c-3.
    split = next(i for i, line in enumerate(LINES) if "a=050" in line)
    source = variant(tmp_path, LINES[:split] + on_adapter(LINES[split:], 3))
    out = tmp_path / "t.rtrace"
    assert roadtest(*import_args(source, out, "0x50")).returncode == 0
    header, _ = load_trace(out)
    assert header.extra["adapter"] == 3
    result = roadtest(*import_args(source, out, "0x50", "--adapter", "0"))
    assert_one_line_error(
        result, f"no i2c events for adapter 0 address 0x50 in {source}", "i2c-3 0x50"
    )
    both = variant(tmp_path, LINES + on_adapter(LINES[1:], 1), "both.txt")
    result = roadtest(*import_args(both, out, "0x44"))
    assert_one_line_error(result, "on several adapters (i2c-0, i2c-1)", "--adapter")
    assert roadtest(*import_args(both, out, "0x44", "--adapter", "1")).returncode == 0
    assert load_trace(out)[0].extra["adapter"] == 1


# Bad input: one line on stderr, a non-zero status, the old output untouched


def test_no_events_at_the_address_says_where_there_were_some(
    tmp_path: Path, roadtest: Roadtest
) -> None:
    result = roadtest(*import_args(REPORT, tmp_path / "t.rtrace", "0x4c"))
    assert_one_line_error(
        result,
        f"no i2c events for address 0x4c in {REPORT}",
        "traffic seen at: i2c-0 0x44, i2c-0 0x50, i2c-0 0x51, i2c-0 0x77",
    )
    result = roadtest(*import_args(REPORT, tmp_path / "t.rtrace", "0x4c", "--adapter", "0"))
    assert_one_line_error(result, f"no i2c events for adapter 0 address 0x4c in {REPORT}")
    assert not (tmp_path / "t.rtrace").exists()


def test_a_report_without_i2c_events(tmp_path: Path, roadtest: Roadtest) -> None:
    source = variant(tmp_path, ["cpus=2\n", "CPU 1 is empty\n"])
    result = roadtest(*import_args(source, tmp_path / "t.rtrace"))
    assert_one_line_error(result, "no i2c events for address 0x44", "recorded with `-e i2c`")


def test_a_missing_file(tmp_path: Path, roadtest: Roadtest) -> None:
    result = roadtest(*import_args(tmp_path / "nothing.dat", tmp_path / "t.rtrace"))
    assert_one_line_error(result, f"{tmp_path / 'nothing.dat'}: no such file")


@pytest.mark.parametrize(
    "content",
    [b"", b"hello\nworld\n", bytes(range(256)) * 4, b"\xff\xfe not utf-8 \xff\n"],
    ids=["empty", "text", "binary", "latin"],
)
def test_not_a_trace_cmd_file(tmp_path: Path, roadtest: Roadtest, content: bytes) -> None:
    source = tmp_path / "board.dat"
    source.write_bytes(content)
    result = roadtest(*import_args(source, tmp_path / "t.rtrace"))
    assert_one_line_error(result, f"{source}: not a trace-cmd file")


def test_a_damaged_trace_dat_that_trace_cmd_reads_as_empty(
    tmp_path: Path, roadtest: Roadtest
) -> None:
    source = tmp_path / "trace.dat"
    source.write_bytes(b"\x17\x08\x44tracing" + b"\x00" * 100)
    # trace-cmd report prints nothing for it and exits 0: not a failure with "no message".
    result = roadtest(*import_args(source, tmp_path / "t.rtrace"))
    assert_one_line_error(result, f"{source}: `trace-cmd report` printed no events")


def test_a_trace_dat_without_trace_cmd_installed(
    tmp_path: Path, roadtest: Roadtest, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "trace.dat"
    source.write_bytes(b"\x17\x08\x44tracing6\x00")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    result = roadtest(*import_args(source, tmp_path / "t.rtrace"))
    assert_one_line_error(result, "trace-cmd is not installed", "apt-get install trace-cmd")
    # A saved report needs no trace-cmd.
    assert roadtest(*import_args(REPORT, tmp_path / "t.rtrace")).returncode == 0


def test_a_task_name_that_is_not_utf8_is_only_a_name(tmp_path: Path, roadtest: Roadtest) -> None:
    first = next(i for i, line in enumerate(LINES) if "python3.11-1 " in line)
    source = tmp_path / "board.txt"
    source.write_bytes(
        b"".join(line.encode() for line in LINES[:first])
        + LINES[first].encode().replace(b"python3.11-1 ", b"pyth\xffn3.11-1 ")
        + b"".join(line.encode() for line in LINES[first + 1 :])
    )
    out = tmp_path / "t.rtrace"
    assert roadtest(*import_args(source, out)).returncode == 0
    assert roadtest(*import_args(REPORT, tmp_path / "plain.rtrace")).returncode == 0
    assert load_trace(out)[1] == load_trace(tmp_path / "plain.rtrace")[1]


def test_a_timestamp_beyond_2_64_ns_is_one_line_and_the_output_stays(
    tmp_path: Path, roadtest: Roadtest
) -> None:
    first = next(i for i, line in enumerate(LINES) if "i2c_write" in line)
    secs = LINES[first].split(": i2c_write", 1)[0].split()[-1]
    source = variant(tmp_path, damaged(first, secs, "18446744073.709551616"))  # 2^64 ns
    out = tmp_path / "out" / "t.rtrace"
    out.parent.mkdir()
    out.write_bytes(b"the user's")
    result = roadtest(*import_args(source, out))
    assert_one_line_error(result, f"{source}: line {first + 1}: timestamp 18446744073.709551616 s")
    assert out.read_bytes() == b"the user's"
    assert [p.name for p in out.parent.iterdir()] == ["t.rtrace"]
    # One nanosecond less fits.
    source = variant(tmp_path, damaged(first, secs, "18446744073.709551615"))
    assert roadtest(*import_args(source, out)).returncode == 0
    assert [p.name for p in out.parent.iterdir()] == ["t.rtrace"]
    assert load_trace(out)[1][0]["t"] == 2**64 - 1


def damaged(index: int, old: str, new: str) -> list[str]:
    assert old in LINES[index], LINES[index]
    return [*LINES[:index], LINES[index].replace(old, new), *LINES[index + 1 :]]


@pytest.mark.parametrize(
    ("lines", "what"),
    [
        (damaged(1, "a=044", "a=zz"), "line 2: malformed i2c_write"),
        (damaged(2, "l=2", "l=2 [00-00]"), "line 3: malformed i2c_read"),
        (damaged(4, "ret=2", "ret=two"), "line 5: malformed i2c_result"),
        (damaged(3, "[54-49]", "[54]"), "line 4: i2c_reply of l=2 shows 1 byte"),
        (damaged(1, "   965.170000: i2c_write", " i2c_write"), "line 2: malformed i2c event"),
        (damaged(4, "n=2", "n=3"), "line 5: i2c_result n=3, but the transfer at line 2 has 2"),
        (damaged(4, "ret=2", "ret=5"), "line 5: i2c_result ret=5 is more than its n=2"),
        (damaged(3, "#1", "#0"), "line 4: i2c_reply to #0, which is not a read"),
        (damaged(2, "#1", "#2"), "line 3: i2c_read #2 where message #1 was due"),
        (damaged(2, "f=0001", "f=0000"), "line 3: i2c_read with flags f=0000"),
        (LINES[:4] + LINES[5:], "line 5: a transfer on i2c-0 starts before the result of"),
        (LINES[:3] + LINES[4:], "line 4: i2c_result ret=2 says message #1 (line 3) was read"),
        (LINES[:9] + ["CPU:0 [3 EVENTS DROPPED]\n"] + LINES[9:], "line 10: the capture lost"),
    ],
    ids=[
        "address",
        "read-with-data",
        "ret",
        "short-data",
        "cut-line",
        "count",
        "ret-too-big",
        "reply-to-write",
        "skipped-message",
        "read-flags",
        "no-result",
        "no-reply",
        "lost-events",
    ],
)
def test_a_malformed_i2c_line_is_named(
    tmp_path: Path, roadtest: Roadtest, lines: list[str], what: str
) -> None:
    source = variant(tmp_path, lines)
    out = tmp_path / "t.rtrace"
    out.write_bytes(b"the old golden trace")
    result = roadtest(*import_args(source, out))
    assert_one_line_error(result, f"{source}: {what}")
    assert out.read_bytes() == b"the old golden trace"  # untouched, and no temporary left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.rtrace", "variant.txt"]


def test_bad_options_are_one_line(tmp_path: Path, roadtest: Roadtest) -> None:
    out = tmp_path / "t.rtrace"
    result = roadtest(*import_args(REPORT, out, "0x44", "--model", "roadtest.models.opt3001"))
    assert_one_line_error(result, "--model roadtest.models.opt3001: expected module:Class")
    result = roadtest(*import_args(REPORT, out, "0x44", "--model", "roadtest.models.nope:X"))
    assert_one_line_error(result, "cannot import roadtest.models.nope")
    result = roadtest(*import_args(REPORT, out, "0x44", "--model", "roadtest.models.opt3001:RESET"))
    assert_one_line_error(result, "has no I2C model RESET")
    result = roadtest(*import_args(REPORT, out, "0x800"))
    assert_one_line_error(result, "--addr 0x800: not an I2C address")
    result = roadtest(*import_args(REPORT, out, "0x44", "--regbytes", "9"))
    assert_one_line_error(result, "--regbytes 9")
    assert not out.exists()


def test_the_installed_command_fails_without_a_traceback(tmp_path: Path) -> None:
    result = subprocess.run(
        [str(ROADTEST), *map(str, import_args(tmp_path / "x.dat", tmp_path / "t.rtrace"))],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ},
    )
    assert result.returncode == 2
    assert result.stderr == f"roadtest: {tmp_path / 'x.dat'}: no such file\n"


def test_errors_are_roadtest_errors() -> None:
    with pytest.raises(TraceCmdError, match="no such file"):
        read_capture(Path("/nonexistent/trace.dat"), 0x44)


# Replay of an imported trace: no model, and found by test and compatible


def device(origin: str = "test_opt3001.SENSOR", compatible: str = "ti,opt3001") -> TracedDevice:
    return TracedDevice(compatible, 0x44, origin)


def attach(hooks: ReplayHooks, dev: TracedDevice, test: str = TEST) -> tuple[I2CBus, OPT3001]:
    """The test's device on a bus, with the player the hooks chose for it."""
    model = OPT3001()
    handler, observer = hooks.attached(test, dev, model, {})
    bus = I2CBus()
    bus.attach(dev.address, handler, observer)
    return bus, model


def play(bus: I2CBus, event: dict[str, Any], change: bytes | None = None) -> list[bytes]:
    """What the driver did in the recorded transfer (a write changed to `change`)."""
    msgs = [
        m["len"] if m["flags"] & I2C_M_RD else (change if change is not None else m["data"])
        for m in event["msgs"]
    ]
    answers, faults = serve(bus, 0x44, *msgs)
    if faults:
        raise faults[0][1]
    return [data for (_, data), m in zip(answers, msgs, strict=True) if isinstance(m, int)]


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    out = tmp_path / "golden" / "opt3001" / "test_illuminance.rtrace"
    import_trace_cmd(REPORT, out, addr=0x44, compatible="ti,opt3001", test=TEST)
    return tmp_path / "golden"


def test_an_imported_trace_replays_for_the_tests_device_of_its_compatible(golden: Path) -> None:
    _, events = load_trace(golden / "opt3001" / "test_illuminance.rtrace")
    hooks = ReplayHooks(golden)
    bus, model = attach(hooks, device())
    answers = [play(bus, e) for e in events]
    assert answers[9] == [b"\x34\x56"]  # the recorded RESULT, with no model behind it
    assert hooks.detached(device()) == []
    assert model.reg_writes(0x01) == []  # the test's model took no part
    assert hooks.outcomes[0].consumed == 12


def test_a_changed_write_diverges(golden: Path) -> None:
    _, events = load_trace(golden / "opt3001" / "test_illuminance.rtrace")
    hooks = ReplayHooks(golden)
    bus, _ = attach(hooks, device())
    for event in events[:3]:
        play(bus, event)
    with pytest.raises(ModelError, match="diverged at event 3"):
        play(bus, events[3], change=b"\x01\xc8\x11")
    (failure,) = map(str, hooks.detached(device()))
    assert "transfer 4 of 12" in failure


def test_the_fallback_needs_the_compatible_and_one_trace(golden: Path, tmp_path: Path) -> None:
    hooks = ReplayHooks(golden)
    with pytest.raises(ReplayError, match="no golden trace for"):
        attach(hooks, device(compatible="ti,opt3002"))
    with pytest.raises(ReplayError, match="no golden trace for"):
        attach(hooks, device(), TEST + "x")
    # Two devices of the compatible in one test cannot share a trace that names neither.
    attach(hooks, device("m.A"))
    with pytest.raises(ReplayError, match=r"names no device, .* two ti,opt3001 devices"):
        attach(hooks, device("m.B"))
    # Two such traces for one test and compatible: which one is meant is not known.
    second = golden / "opt3001" / "board2.rtrace"
    import_trace_cmd(REPORT, second, addr=0x44, compatible="ti,opt3001", test=TEST)
    with pytest.raises(ReplayError, match="2 golden traces for .* name no device"):
        attach(ReplayHooks(golden), device())


def test_a_trace_naming_the_device_comes_first(golden: Path) -> None:
    named = golden / "opt3001" / "named.rtrace"
    import_trace_cmd(
        REPORT, named, addr=0x50, compatible="ti,opt3001", test=TEST, device="m.SENSOR"
    )
    hooks = ReplayHooks(golden)
    attach(hooks, device("m.SENSOR"))
    attach(hooks, device("m.OTHER"))
    mine, other = hooks.players[device("m.SENSOR")], hooks.players[device("m.OTHER")]
    assert mine.path == named
    assert other.path == golden / "opt3001" / "test_illuminance.rtrace"
