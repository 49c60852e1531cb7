"""A hostile SPI device and device-event scripts on SPI, on the backend's SPI bus driven
directly: what lies it tells, and that every answer stays one the bus can carry (RX of the
transfer's length, OK or TRANS_ERR, nothing OK after a failure: virtio specification, "SPI
Controller Device")."""

from __future__ import annotations

import threading
from pathlib import Path

from helpers import RecordingLine
from hypothesis import find, given
from hypothesis import strategies as st

from roadtest.backend.spi import SPIBus
from roadtest.backend.spi_transfer import SPIMessage, SPITransfer
from roadtest.fuzz.events import InterruptChange, Pass, TransferFails
from roadtest.fuzz.lying_device import HostilePlan, HostileSPIHandler, spi_plans
from roadtest.fuzz.scripted import ScriptedSPIHandler
from roadtest.models.base import SPIModel
from roadtest.pytest_plugin.hostile import HostileHooks
from roadtest.recorder.recording import RecordingHooks
from roadtest.trace.format import load_trace
from roadtest.trace.names import TracedDevice

OK, TRANS_ERR = 0, 2


class Chip(SPIModel):
    """Shifts out 0x5a for every byte; logs what reaches it; refuses a TX of 0xee."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def select(self) -> None:
        self.calls.append("select")

    def deselect(self) -> None:
        self.calls.append("deselect")

    def transfer(self, tx: bytes | None, length: int, mode: int, bits_per_word: int) -> bytes:
        if tx is not None and b"\xee" in tx:
            raise ValueError("0xee")
        self.calls.append(f"transfer {length}")
        return b"\x5a" * length


def read(length: int, bits_per_word: int = 8) -> SPITransfer:
    return SPITransfer(0, bits_per_word, rx_wanted=True, length=length)


def write(data: bytes) -> SPITransfer:
    return SPITransfer(0, tx=data, length=len(data))


def serve(bus: SPIBus, *transfers: SPITransfer) -> list[tuple[int, bytes]]:
    message = SPIMessage(0, list(transfers))
    thread = threading.Thread(target=bus.serve, args=(message,))
    thread.start()
    thread.join()
    assert message.faults is None  # the hostile device reports none of the model's complaints
    return [(t.result, t.rx) for t in message.transfers]


def hostile(plan: HostilePlan, model: SPIModel | None = None) -> SPIBus:
    bus = SPIBus()
    bus.attach(0, HostileSPIHandler(model or Chip(), plan))
    return bus


def test_the_honest_plan_answers_as_the_model() -> None:
    chip = Chip()
    bus = hostile(HostilePlan(), chip)
    assert serve(bus, write(b"\x01"), read(3)) == [(OK, b"\x5a"), (OK, b"\x5a" * 3)]
    assert chip.calls == ["select", "transfer 1", "transfer 3", "deselect"]


def test_lies_are_all_zeros_all_ones_or_a_value_most_significant_byte_first() -> None:
    # Reads are the transfers with RX: #0 and #1 here, then #2, #3.
    plan = HostilePlan(lies=((0, 0), (1, 0xFFFFFFFF), (2, 0x8000), (3, 0x01020304)))
    bus = hostile(plan)
    assert serve(bus, write(b"\x01"), read(2), read(2)) == [
        (OK, b"\x5a"),  # a write's RX reaches no driver: no lie is spent on it
        (OK, b"\x00\x00"),
        (OK, b"\xff\xff"),
    ]
    assert serve(bus, read(2)) == [(OK, b"\x80\x00")]
    assert serve(bus, read(6)) == [(OK, b"\x01\x02\x03\x04\x01\x02")]


def test_a_flip_flips_those_bits_of_the_models_answer() -> None:
    bus = hostile(HostilePlan(flips=((0, 0x1), (1, 0x8000))))
    assert serve(bus, read(2)) == [(OK, b"\x5a\x5b")]
    assert serve(bus, read(2)) == [(OK, b"\xda\x5a")]
    assert serve(bus, read(2)) == [(OK, b"\x5a\x5a")]


def test_a_failed_message_fails_from_its_transfer_on_and_the_model_sees_the_ones_before() -> None:
    chip = Chip()
    bus = hostile(HostilePlan(faults=((1, 1),)), chip)
    serve(bus, read(1))
    chip.calls.clear()
    assert serve(bus, write(b"\x01"), read(2), read(1)) == [
        (OK, b"\x5a"),
        (TRANS_ERR, b""),
        (TRANS_ERR, b""),
    ]
    assert chip.calls == ["select", "transfer 1", "deselect"]


def test_what_the_model_refuses_is_trans_err_not_a_reported_fault() -> None:
    handler = HostileSPIHandler(Chip(), HostilePlan())
    bus = SPIBus()
    bus.attach(0, handler)
    assert serve(bus, write(b"\xee"), read(1)) == [(TRANS_ERR, b""), (TRANS_ERR, b"")]
    assert handler.refusals == 1


def test_an_interrupt_toggles_the_line_after_its_message() -> None:
    irq = RecordingLine()
    irq.set(False)
    bus = SPIBus()
    bus.attach(0, HostileSPIHandler(Chip(), HostilePlan(interrupts=(1,)), irq))
    serve(bus, read(1))
    assert irq.levels == [False]
    serve(bus, read(1))
    assert irq.levels == [False, True]


MESSAGES = st.lists(
    st.lists(
        st.one_of(
            st.builds(read, st.sampled_from([0, 1, 2, 4, 6]), st.sampled_from([8, 16, 32])),
            st.builds(write, st.binary(min_size=1, max_size=4)),
        ),
        min_size=1,
        max_size=3,
    ),
    max_size=6,
)


@given(plan=spi_plans(horizon=8), messages=MESSAGES)
def test_hostile_answers_stay_within_what_the_bus_carries(
    plan: HostilePlan, messages: list[list[SPITransfer]]
) -> None:
    bus = hostile(plan)
    for transfers in messages:
        failed = False
        for (result, rx), t in zip(serve(bus, *transfers), transfers, strict=True):
            assert result in (OK, TRANS_ERR)
            if result == OK:
                assert not failed and type(rx) is bytes and len(rx) == t.length
            else:
                failed = True
                assert rx == b""


def test_spi_plans_shrink_to_the_honest_device() -> None:
    assert find(spi_plans(), lambda plan: True) == HostilePlan()


# Device-event scripts on SPI


def test_transfer_fails_fails_a_message_from_that_transfer_and_pass_lets_messages_go() -> None:
    chip = Chip()
    bus = SPIBus()
    bus.attach(0, ScriptedSPIHandler(chip, chip, [Pass(1), TransferFails(1)], {}))
    assert serve(bus, read(1)) == [(OK, b"\x5a")]
    chip.calls.clear()
    assert serve(bus, write(b"\x01"), read(2)) == [(OK, b"\x5a"), (TRANS_ERR, b"")]
    assert chip.calls == ["select", "transfer 1", "deselect"]
    assert serve(bus, read(1)) == [(OK, b"\x5a")]  # the script is over: the model answers


def test_an_interrupt_change_on_spi_drives_the_line_active_low() -> None:
    irq = RecordingLine()
    chip = Chip()
    bus = SPIBus()
    bus.attach(0, ScriptedSPIHandler(chip, chip, [InterruptChange("irq", True)], {"irq": irq}))
    serve(bus, read(1))
    assert irq.levels == [False]


def test_hostile_hooks_keep_the_recorders_observer_on_spi(tmp_path: Path) -> None:
    device = TracedDevice("ti,tmp121", 0, "test_x.SENSOR", (), bus="spi")
    recording = RecordingHooks(tmp_path, "k")
    hooks = HostileHooks(recording, HostilePlan(lies=((0, 0),)))
    target, observer = hooks.attached_spi("tests/x.py::test_a", device, Chip(), {})
    assert isinstance(target, HostileSPIHandler) and observer is not None
    bus = SPIBus()
    bus.attach(0, target, observer)
    assert serve(bus, read(2)) == [(OK, b"\x00\x00")]
    recording.detached(device)
    _, events = load_trace(next(tmp_path.rglob("*.rtrace")))
    assert events[0]["xfers"][0]["rx"] == b"\x00\x00"  # the lie, as the driver got it
