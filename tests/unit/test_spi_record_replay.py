"""Recording an SPI device's messages and replaying them: on the backend's SPI bus driven
directly, and end to end through virtio-spi from a fake frontend (no guest).

Expected values: the TMP121's output from TI's datasheet SBOS273 (25 degC is 400 counts of
0.0625 degC in D15..D3, D2 a one, D1 and D0 high impedance on a pulled-up line: 0x0C87),
the virtio-spi results from the specification (OK 0, TRANS_ERR 2).
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import spi_frontend as spi
from fake_frontend import FakeFrontend
from spi_frontend import Xfer

from roadtest.backend.gpio import GpioLine, VirtioGpio
from roadtest.backend.server import Backend
from roadtest.backend.spi import SPIBus, VirtioSpi
from roadtest.backend.spi_transfer import SPIMessage, SPITransfer
from roadtest.models.base import SPIModel
from roadtest.models.tmp121 import TMP121
from roadtest.recorder.recording import RecordingHooks
from roadtest.replayer.failures import ReplayFailure
from roadtest.replayer.player import ReplayHooks
from roadtest.testing.hooks import DeviceHooks
from roadtest.trace.format import load_trace
from roadtest.trace.names import TracedDevice

OK, TRANS_ERR = 0, 2
TEST = "tests/drivers/hwmon/test_x.py::test_a"
DEV = TracedDevice("ti,tmp121", 2, "test_x.SENSOR", ("irq",), bus="spi")
MHZ10 = 10_000_000


def read2(cs: int = 2, freq: int = MHZ10, mode: int = 0) -> SPITransfer:
    """What lm70 asks of a TMP121: 2 bytes of RX, no TX."""
    return SPITransfer(cs, mode=mode, freq=freq, rx_wanted=True, length=2)


def write(data: bytes, cs: int = 2) -> SPITransfer:
    return SPITransfer(cs, freq=MHZ10, tx=data, length=len(data))


def serve(bus: SPIBus, *transfers: SPITransfer) -> SPIMessage:
    """One message, served on a thread of its own as the backend's is."""
    message = SPIMessage(transfers[0].cs, list(transfers))
    thread = threading.Thread(target=bus.serve, args=(message,))
    thread.start()
    thread.join()
    return message


def answers(message: SPIMessage) -> list[tuple[int, bytes]]:
    return [(t.result, t.rx) for t in message.transfers]


def attach(hooks: DeviceHooks, model: SPIModel, line: GpioLine) -> SPIBus:
    bus = SPIBus()
    target, observer = hooks.attached_spi(TEST, DEV, model, {"irq": line})
    bus.attach(DEV.address, target, observer)
    return bus


class Counter(SPIModel):
    """Shifts out 0x00, 0x01, ... across messages; logs what it is sent; refuses a TX of
    0xee (a chip that cannot take it)."""

    def __init__(self) -> None:
        self.n = 0
        self.sent: list[bytes | None] = []

    def transfer(self, tx: bytes | None, length: int, mode: int, bits_per_word: int) -> bytes:
        if tx is not None and b"\xee" in tx:
            raise ValueError("0xee")
        self.sent.append(tx)
        out = bytes((self.n + i) & 0xFF for i in range(length))
        self.n += length
        return out


@pytest.fixture
def line() -> GpioLine:
    return VirtioGpio(ngpio=2).line(1)


def record(tmp_path: Path, line: GpioLine, model: SPIModel, *messages: list[SPITransfer]) -> Path:
    hooks = RecordingHooks(tmp_path / "traces", "6.12.0-test")
    bus = attach(hooks, model, line)
    hooks.marker(DEV, "bind", None)
    for transfers in messages:
        serve(bus, *transfers)
    assert hooks.detached(DEV) == []
    return tmp_path / "traces"


def test_a_message_is_recorded_as_it_went_back_to_the_driver(
    tmp_path: Path, line: GpioLine
) -> None:
    golden = record(tmp_path, line, Counter(), [write(b"\x0b"), read2()], [read2()])
    (path,) = golden.rglob("*.rtrace")
    header, events = load_trace(path)
    assert header.bus == "spi" and header.address == 2 and header.schema == 2
    assert header.model == f"{__name__}:Counter"
    assert [e["kind"] for e in events] == ["marker", "spi", "spi"]
    spi_event = events[1]
    assert spi_event["cs"] == 2
    first, second = spi_event["xfers"]
    # The write's RX went nowhere (no rx_buf): none is recorded; the read's is.
    assert (first["tx"], first["rx"], first["len"], first["result"]) == (b"\x0b", None, 1, OK)
    assert (second["tx"], second["rx"], second["result"]) == (None, b"\x01\x02", OK)
    assert second["freq"] == MHZ10 and second["mode"] == 0 and second["bits_per_word"] == 8
    assert events[2]["xfers"][0]["rx"] == b"\x03\x04"


def test_a_tmp121_read_is_recorded_as_the_datasheet_says(tmp_path: Path, line: GpioLine) -> None:
    golden = record(tmp_path, line, TMP121(), [read2()])
    header, events = load_trace(next(golden.rglob("*.rtrace")))
    assert header.model == "roadtest.models.tmp121:TMP121"
    assert events[1]["xfers"][0]["rx"] == b"\x0c\x87"  # 25 degC


def test_a_failed_transfer_is_recorded_with_the_ones_after_it(
    tmp_path: Path, line: GpioLine
) -> None:
    golden = record(tmp_path, line, Counter(), [write(b"\xee"), read2()])
    _, events = load_trace(next(golden.rglob("*.rtrace")))
    xfers = events[1]["xfers"]
    assert [(x["result"], x["rx"]) for x in xfers] == [(TRANS_ERR, None), (TRANS_ERR, b"")]


def test_a_recorded_message_replays_with_the_recorded_answers(
    tmp_path: Path, line: GpioLine
) -> None:
    golden = record(
        tmp_path, line, Counter(), [write(b"\x01"), read2()], [read2()], [write(b"\xee")]
    )
    hooks = ReplayHooks(golden)
    model = Counter()
    model.n = 0x40  # the model answers otherwise now: the trace's answers count
    bus = attach(hooks, model, line)
    hooks.marker(DEV, "bind", None)
    assert answers(serve(bus, write(b"\x01"), read2())) == [(OK, bytes(1)), (OK, b"\x01\x02")]
    assert answers(serve(bus, read2())) == [(OK, b"\x03\x04")]
    assert answers(serve(bus, write(b"\xee"))) == [(TRANS_ERR, b"")]  # as recorded
    assert hooks.detached(DEV) == []
    # The test's model still saw the messages (its state follows the test).
    assert model.sent == [b"\x01", None, None]
    assert hooks.outcomes[0].consumed == 3


def test_a_changed_tx_diverges_naming_the_chip_select_and_byte(
    tmp_path: Path, line: GpioLine
) -> None:
    golden = record(tmp_path, line, Counter(), [write(b"\x01\x34"), read2()], [read2()])
    hooks = ReplayHooks(golden)
    bus = attach(hooks, Counter(), line)
    hooks.marker(DEV, "bind", None)
    message = serve(bus, write(b"\x01\x12"), read2())
    assert answers(message) == [(TRANS_ERR, b""), (TRANS_ERR, b"")]
    ((_, failure),) = message.faults or []
    assert isinstance(failure, ReplayFailure)
    assert (
        str(failure)
        .splitlines()[0]
        .startswith(
            "cs2 transfer 0: TX byte 1 is 0x12, expected 0x34; got: spi cs2 mode 0, 8 bits, "
            "10 MHz: w 01 12 | r 2: "
        )
    )
    # Every later message fails too, and the verdict is the divergence.
    assert answers(serve(bus, read2())) == [(TRANS_ERR, b"")]
    (verdict,) = hooks.detached(DEV)
    assert verdict is failure


@pytest.mark.parametrize(
    ("transfer", "why"),
    [
        (read2(freq=1_000_000), "cs2 transfer 0: 1 MHz, expected 10 MHz"),
        (read2(mode=3), "cs2 transfer 0: mode 3, expected mode 0"),
        (write(b"\x00\x00"), "cs2 transfer 0 has a TX buffer, expected none"),
        (SPITransfer(2, freq=MHZ10, rx_wanted=True, length=4), "cs2 transfer 0: len 4, expected 2"),
        (
            SPITransfer(2, 16, freq=MHZ10, rx_wanted=True, length=2),
            "cs2 transfer 0: bits_per_word 16, expected 8",
        ),
    ],
)
def test_a_changed_question_diverges_saying_what_changed(
    tmp_path: Path, line: GpioLine, transfer: SPITransfer, why: str
) -> None:
    golden = record(tmp_path, line, Counter(), [read2()])
    hooks = ReplayHooks(golden)
    bus = attach(hooks, Counter(), line)
    message = serve(bus, transfer)
    assert answers(message) == [(TRANS_ERR, b"")]
    ((_, failure),) = message.faults or []
    assert str(failure).startswith(why)


def test_messages_the_driver_did_not_make_fail_the_replay(tmp_path: Path, line: GpioLine) -> None:
    golden = record(tmp_path, line, Counter(), [read2()], [write(b"\x05")])
    hooks = ReplayHooks(golden)
    bus = attach(hooks, Counter(), line)
    serve(bus, read2())
    (failure,) = hooks.detached(DEV)
    assert str(failure).splitlines()[0] == (
        "the driver stopped after transfer 1 of 2; next expected: #2 spi cs2 mode 0, 8 bits, "
        "10 MHz: w 05"
    )


def test_a_repeated_read_is_tolerated_only_when_asked(tmp_path: Path, line: GpioLine) -> None:
    golden = record(tmp_path, line, TMP121(), [read2()], [read2()], [write(b"\x01")])
    for tolerate in (True, False):
        hooks = ReplayHooks(golden, tolerate_repeats=tolerate)
        bus = attach(hooks, TMP121(), line)
        for _ in range(3):  # one read more than recorded
            assert answers(serve(bus, read2())) == [(OK, b"\x0c\x87")] or not tolerate
        serve(bus, write(b"\x01"))
        failures = hooks.detached(DEV)
        assert (failures == []) is tolerate
        if tolerate:
            assert hooks.outcomes[0].tolerated == 1


def test_a_message_that_writes_more_than_a_command_is_never_a_repeat(
    tmp_path: Path, line: GpioLine
) -> None:
    # Two bytes out may change the device: not a read to repeat.
    golden = record(tmp_path, line, Counter(), [write(b"\x01\x02"), read2()])
    hooks = ReplayHooks(golden, tolerate_repeats=True)
    bus = attach(hooks, Counter(), line)
    serve(bus, write(b"\x01\x02"), read2())
    assert serve(bus, write(b"\x01\x02"), read2()).faults
    assert hooks.detached(DEV)


def test_an_spi_trace_does_not_answer_an_i2c_device(tmp_path: Path, line: GpioLine) -> None:
    golden = record(tmp_path, line, TMP121(), [read2()])
    i2c_twin = TracedDevice("ti,tmp121", 2, "test_x.SENSOR", ("irq",))
    with pytest.raises(Exception, match="is of a device on spi, and test_x.SENSOR is on i2c"):
        ReplayHooks(golden).attached(TEST, i2c_twin, object(), {})  # type: ignore[arg-type]


# End to end: the messages a driver queues on virtio-spi, recorded and replayed.


def frontend(device: VirtioSpi) -> Iterator[FakeFrontend]:
    with tempfile.TemporaryDirectory(prefix="rt-spi-") as d:
        with Backend(Path(d), devices=[device]) as backend:
            assert backend.device(VirtioSpi) is device
            with FakeFrontend.connect(backend.socket("spi")) as fe:
                fe.setup(1)
                yield fe


def test_through_virtio_spi_a_recording_replays_and_a_refused_transfer_is_not_in_it(
    tmp_path: Path, line: GpioLine
) -> None:
    driver = [
        [Xfer(cs=2, rx=2, freq=MHZ10)],
        [Xfer(cs=2, rx=2, freq=MHZ10, bits_per_word=16)],
        [Xfer(cs=2, rx=2, freq=MHZ10, mode=0x20)],  # reserved mode bits: PARAM_ERR
    ]
    recording = RecordingHooks(tmp_path / "traces", "6.12.0-test")
    device = VirtioSpi()
    target, observer = recording.attached_spi(TEST, DEV, TMP121(), {"irq": line})
    device.attach(2, target, observer)
    recorded = [spi.transfer(fe.queues[0], *m) for fe in frontend(device) for m in driver]
    recording.detached(DEV)
    # 16-bit words reach the driver in its memory's order (little-endian): 0x0C87.
    assert recorded == [
        [(OK, b"\x0c\x87")],
        [(OK, b"\x87\x0c")],
        [(spi.VIRTIO_SPI_PARAM_ERR, b"")],
    ]
    _, events = load_trace(next((tmp_path / "traces").rglob("*.rtrace")))
    assert [e["xfers"][0]["bits_per_word"] for e in events if e["kind"] == "spi"] == [8, 16]

    replaying = ReplayHooks(tmp_path / "traces")
    model = TMP121()
    model.temperature = -40.0  # the trace answers, not the model
    device = VirtioSpi()
    target, observer = replaying.attached_spi(TEST, DEV, model, {"irq": line})
    device.attach(2, target, observer)
    replayed = [spi.transfer(fe.queues[0], *m) for fe in frontend(device) for m in driver]
    assert replayed == recorded
    assert replaying.detached(DEV) == []
