"""Damaged real traces against every reader entry point: trace show, trace diff, and
replay's loading and playing of a golden trace.

Real traces from traces/ get Hypothesis-made damage (truncations, byte flips,
inserted bytes), and the explicit hostile cases of the hardening issue join
them. Every entry point either accepts a valid prefix of the events (SCHEMA.md,
Reading: a strict reader returns the events before the damage, then fails)
or fails with one clean `roadtest: ...` line (for replay: one summary line);
never another exception, never a hang. Deterministic (derandomized) and small,
so that it runs in seconds.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lz4.frame
import msgpack
import pytest
from helpers import deep_marker, raw_trace
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roadtest.backend.gpio import GpioLine, VirtioGpio
from roadtest.backend.i2c_transfer import I2CMessage, Transfer
from roadtest.cli import main
from roadtest.models.base import I2CModel, ModelError
from roadtest.replayer.player import ReplayHooks, TracePlayer
from roadtest.trace.format import Header, load_trace
from roadtest.trace.names import TracedDevice

I2C_M_RD = 1 << 1  # virtio-i2c read flag (include/uapi/linux/virtio_i2c.h)
REPO = Path(__file__).resolve().parents[2]
CORPUS = [
    REPO / "traces" / "opt3001" / "test_illuminance.rtrace",
    REPO / "traces" / "pcf8563" / "test_alarm.rtrace",  # GPIO requests and interrupts
    REPO / "traces" / "tps62864" / "test_modes-control-reset.rtrace",
]
PROFILE = settings(
    derandomize=True,
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def cli(*args: str | Path) -> tuple[int, str, str]:
    """`roadtest ARGS` in this process: exit status, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main([str(a) for a in args])
    return status, out.getvalue(), err.getvalue()


def event_lines(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if not line.startswith("#")]


def clean_error(stderr: str) -> None:
    assert stderr.count("\n") == 1 and stderr.startswith("roadtest: "), stderr
    assert "Traceback" not in stderr and "\x1b" not in stderr


ORIGINAL_SHOW = {path: event_lines(cli("trace", "show", path)[1]) for path in CORPUS}


def check_show(original: Path, damaged: Path, prefix: bool = True) -> None:
    """`prefix`: `damaged` is `original`'s bytes, damaged (not a trace made by hand)."""
    status, out, err = cli("trace", "show", damaged)
    want = ORIGINAL_SHOW.get(original) if prefix else None
    assert status in (0, 2), (status, err)
    assert "\x1b" not in out  # what a trace holds is shown escaped
    if status == 2:
        clean_error(err)
    if want is not None:
        got = event_lines(out)
        assert got == want[: len(got)]  # a prefix of the events
        assert status == 2 or got == want


def check_diff(original: Path, damaged: Path, prefix: bool = True) -> None:
    for a, b in ((original, damaged), (damaged, original)):
        status, out, err = cli("trace", "diff", a, b)
        assert status in (0, 1, 2), (status, err)
        assert "\x1b" not in out
        if status == 2:
            clean_error(err)


class _Anything(I2CModel):
    """The test's model, as the player sees it: it takes every message."""

    def write(self, data: bytes) -> None:
        pass

    def read(self, length: int) -> bytes:
        return bytes(length)


class _Bus:
    """Drives a player as the driver of the original trace did, event for event."""

    def __init__(self, player: TracePlayer, lines: dict[str, GpioLine], model: bool) -> None:
        self.player, self.lines, self.model = player, lines, model

    def play(self, event: dict[str, Any]) -> None:
        if event["kind"] == "i2c":
            # What the driver sent: the bytes of its writes, the lengths of its reads.
            sent = [
                I2CMessage(m["flags"], m["len"], b"" if m["flags"] & I2C_M_RD else m["data"])
                for m in event["msgs"]
            ]
            transfer = Transfer(0, sent)
            self.player.transfer(transfer)
            for _, exc in transfer.faults or ():
                raise exc
        elif event["kind"] == "gpio":
            line = self.lines[event["name"]]
            self.player.observe_gpio(line, event["op"], event["value"], event["status"])
        elif event["kind"] == "irq" and self.model:  # the test's model raises it
            self.player.observe_gpio(self.lines[event["name"]], "input", event["level"], 0)
        elif event["kind"] == "marker" and event["what"] == "bind":
            self.player.bound()


def check_replay(original: Path, damaged: Path, prefix: bool = True) -> str:
    """A golden directory holding the damaged copy: the hooks load, the player plays what
    the original recorded, and the verdict is ok or one line; nothing else escapes."""
    header, events = load_trace(original)
    golden = damaged.parent
    hooks = ReplayHooks(golden)  # never raises for a damaged trace
    if damaged in hooks.index.damaged:
        reason = hooks.index.damaged[damaged]
        assert "\n" not in reason and (reason.startswith("byte ") or "file" in reason), reason
        return reason
    names = {e["name"] for e in events if e["kind"] in ("gpio", "irq")}
    gpio = VirtioGpio(ngpio=max(2, len(names)))
    lines = {name: gpio.line(i) for i, name in enumerate(sorted(names))}
    device = TracedDevice(
        header.compatible, header.address, str(header.extra["device"]), tuple(lines)
    )
    hooks.attached(header.test, device, _Anything(), lines)
    player = hooks.players[device]
    bus = _Bus(player, lines, bool(header.model))
    for event in events:
        try:
            bus.play(event)
        except ModelError:  # the player failed, at the damage
            if player.failure:
                break
    failures = hooks.detached(device)
    (outcome,) = hooks.outcomes
    if not outcome.failure:
        assert failures == []
    else:
        assert "\n" not in outcome.failure and "\x1b" not in outcome.failure
        assert outcome.damaged or "diverged" in outcome.failure, outcome.failure
        assert len(outcome.failure) < 2000
    return outcome.failure


ENTRY_POINTS: list[Any] = [check_show, check_diff, check_replay]


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp)


def damaged_copy(scratch: Path, original: Path, data: bytes) -> Path:
    golden = scratch / "golden"
    shutil.rmtree(golden, ignore_errors=True)
    path = golden / original.parent.name / original.name
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    return path


def check_all(scratch: Path, original: Path, data: bytes) -> None:
    damaged = damaged_copy(scratch, original, data)
    for check in ENTRY_POINTS:
        check(original, damaged)


def test_the_undamaged_corpus_replays_cleanly(scratch: Path) -> None:
    for original in CORPUS:
        damaged = damaged_copy(scratch, original, original.read_bytes())
        # The check's driver does what the recording's did: all of it plays.
        assert check_replay(original, damaged) == ""


traces = st.sampled_from(CORPUS)


@PROFILE
@given(original=traces, cut=st.floats(0, 1, exclude_max=True))
def test_truncations(scratch: Path, original: Path, cut: float) -> None:
    data = original.read_bytes()
    check_all(scratch, original, data[: int(len(data) * cut)])


@PROFILE
@given(
    original=traces,
    flips=st.lists(
        st.tuples(st.floats(0, 1, exclude_max=True), st.integers(1, 255)), min_size=1, max_size=3
    ),
)
def test_byte_flips(scratch: Path, original: Path, flips: list[tuple[float, int]]) -> None:
    data = bytearray(original.read_bytes())
    for where, xor in flips:
        data[int(len(data) * where)] ^= xor
    check_all(scratch, original, bytes(data))


@PROFILE
@given(original=traces, where=st.floats(0, 1), insert=st.binary(min_size=1, max_size=12))
def test_inserted_bytes(scratch: Path, original: Path, where: float, insert: bytes) -> None:
    data = original.read_bytes()
    at = int(len(data) * where)
    check_all(scratch, original, data[:at] + insert + data[at:])


# The explicit cases of the hardening issue, each through every entry point.

HEADER = load_trace(CORPUS[2])[0]
ORIGINAL_EVENTS = [
    {k: v for k, v in e.items() if k not in ("seq", "t")} for e in load_trace(CORPUS[2])[1]
]


def with_created(created: float) -> bytes:
    stream = msgpack.packb({**HEADER.to_map(), "created": created}) + b"".join(
        msgpack.packb({"seq": i, "t": i, **e}) for i, e in enumerate(ORIGINAL_EVENTS)
    )
    compressed: bytes = lz4.frame.compress(stream)
    return compressed


def hand_made(*events: object, header: Header = HEADER) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        return raw_trace(Path(tmp) / "x.rtrace", header, *events).read_bytes()


GPIO = {"kind": "gpio", "line": 1, "name": "irq", "value": 0, "status": 0}
ESCAPE = "\x1b]0;owned\x07\x1b[2J"
HUGE = [{"flags": 0, "len": 1, "data": b"\x01", "status": 0}] * 65536
EXPLICIT: dict[str, bytes] = {
    **{
        f"created={name}": with_created(value)
        for name, value in {
            "inf": math.inf,
            "nan": math.nan,
            "1e20": 1e20,
            "2**63": 2**63,
            "-2**63": -(2**63),
            "year-10000": 253402300800.0,
        }.items()
    },
    "detail-1000-deep": hand_made(*ORIGINAL_EVENTS[:3], deep_marker(1000, seq=3)),
    "gpio-op-list": hand_made({**GPIO, "op": ["mask"]}),
    "gpio-op-map": hand_made({**GPIO, "op": {"mask": 1}}),
    "escapes": hand_made(
        {"kind": "marker", "what": ESCAPE, "detail": {ESCAPE: ESCAPE}},
        header=Header(**{**HEADER.__dict__, "kernel": ESCAPE, "test": HEADER.test}),
    ),
    "huge-transfer": hand_made(*ORIGINAL_EVENTS[:2], {"kind": "i2c", "msgs": HUGE}),
    "empty": b"",
    "not-lz4": b"not a trace at all\n",
    "last-block-flipped": (lambda b: b[:-13] + bytes([b[-13] ^ 0x40]) + b[-12:])(
        CORPUS[2].read_bytes()
    ),
}


@pytest.mark.parametrize("name", sorted(EXPLICIT))
@pytest.mark.parametrize("check", ENTRY_POINTS, ids=lambda c: c.__name__)
def test_explicit_hostile_input(scratch: Path, name: str, check: Any) -> None:
    damaged = damaged_copy(scratch, CORPUS[2], EXPLICIT[name])
    check(CORPUS[2], damaged, prefix=name == "last-block-flipped")


@pytest.mark.parametrize("check", ENTRY_POINTS, ids=lambda c: c.__name__)
def test_a_fifo_and_a_directory_are_refused(scratch: Path, check: Any) -> None:
    for make in (os.mkfifo, os.mkdir):
        damaged = damaged_copy(scratch, CORPUS[2], b"")
        damaged.unlink()
        make(damaged)
        check(CORPUS[2], damaged)  # a hang would time out the test run
