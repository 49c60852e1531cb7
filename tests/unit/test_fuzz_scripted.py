"""A device-events script applied to a device (roadtest.fuzz.scripted): each event before the
device's next transfer, in order. Statuses are virtio-i2c's (include/uapi/linux/virtio_i2c.h:
VIRTIO_I2C_MSG_OK 0, VIRTIO_I2C_MSG_ERR 1; VIRTIO_I2C_FLAGS_M_RD is bit 1)."""

from __future__ import annotations

from roadtest.backend.i2c_model import ModelHandler
from roadtest.backend.i2c_transfer import I2CMessage, Transfer
from roadtest.fuzz.events import DeviceEvent, InterruptChange, Pass, RegisterChange, TransferFails
from roadtest.fuzz.scripted import ScriptedHandler
from roadtest.models.base import SimpleSMBusModel
from roadtest.models.interrupt import Drive, InterruptPin, Polarity

OK, ERR = 0, 1
M_RD = 1 << 1


def read_register(handler: ScriptedHandler, reg: int) -> Transfer:
    """An SMBus read-byte-data: write the register's number, then read one byte."""
    transfer = Transfer(0x48, [I2CMessage(0, 1, bytes([reg])), I2CMessage(M_RD, 1, b"")])
    handler.transfer(transfer)
    return transfer


def scripted(script: list[DeviceEvent], lines: dict[str, object] | None = None) -> ScriptedHandler:
    model = SimpleSMBusModel(regs={0x00: 0x11, 0x01: 0x22})
    return ScriptedHandler(ModelHandler(model), model, script, lines or {})  # type: ignore[arg-type]


def answers(transfer: Transfer) -> list[tuple[int, bytes]]:
    return [(m.status, m.data) for m in transfer.messages]


def test_pass_lets_transfers_go_then_a_failure_fails_from_its_message() -> None:
    handler = scripted([Pass(2), TransferFails(1)])
    assert answers(read_register(handler, 0)) == [(OK, b"\x00"), (OK, b"\x11")]
    assert answers(read_register(handler, 1)) == [(OK, b"\x01"), (OK, b"\x22")]
    # The register number is written; the read fails (the guest sees one message done).
    assert answers(read_register(handler, 0)) == [(OK, b"\x00"), (ERR, b"")]
    assert answers(read_register(handler, 0)) == [(OK, b"\x00"), (OK, b"\x11")]  # script done
    assert handler.applied == 2


def test_a_failure_at_message_zero_fails_the_whole_transfer() -> None:
    handler = scripted([TransferFails(0)])
    assert [status for status, _ in answers(read_register(handler, 0))] == [ERR, ERR]


def test_a_register_change_is_what_the_next_read_returns() -> None:
    handler = scripted([RegisterChange("STATUS", 0x01, 0x5A)])
    assert answers(read_register(handler, 1))[1] == (OK, b"\x5a")


class Line:
    def __init__(self) -> None:
        self.levels: list[bool] = []
        self.input = True

    def set(self, level: bool) -> None:
        self.levels.append(level)
        self.input = level


def test_an_interrupt_line_without_a_pin_is_active_low() -> None:
    line = Line()
    handler = scripted(
        [InterruptChange("alert", True), InterruptChange("alert", False)], {"alert": line}
    )
    read_register(handler, 0)
    assert line.levels == [False, True]  # asserted low, then released before the same transfer


class PinModel(SimpleSMBusModel, InterruptPin):
    int_polarity = Polarity.ACTIVE_HIGH
    int_drive = Drive.PUSH_PULL

    @property
    def int_asserted(self) -> bool:
        return False


def test_a_models_interrupt_pin_keeps_its_polarity() -> None:
    model = PinModel(regs={0: 0})
    line = Line()
    model.irq = line  # type: ignore[assignment]
    handler = ScriptedHandler(ModelHandler(model), model, [InterruptChange("irq", True)], {})
    read_register(handler, 0)
    assert line.input is True  # active high: asserted is the high level
