"""What a device does on its own, as data: the events `device_events` draws and the fuzz
runtime applies to a model. No behaviour here.

A sequence of events is a script for one device, applied in order: each event
takes effect before the device's next transfer, and `Pass(n)` lets n transfers
go as the model answers them. An empty script is the model left alone.

NACKs and errors on the wire: virtio-i2c has one failure status,
VIRTIO_I2C_MSG_ERR (include/uapi/linux/virtio_i2c.h: OK 0, ERR 1), so an
address NACK, a data NACK and any other bus failure look the same to the guest.
What differs is where in the transfer the failure comes: `TransferFails(k)`
answers messages 0..k-1 of the transfer and fails message k, and by the spec's
FAIL_NEXT rule (roadtest.backend.i2c) every later message fails too. k = 0 is
an address NACK, or a transfer that fails as a whole. The guest's i2c-virtio
then returns k from its master_xfer (the messages that completed), not an
errno: i2c_transfer() returns 0 for k = 0, and the SMBus emulation turns any
short count into -EIO.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Pass:
    """The device's next `transfers` transfers go as the model answers them."""

    transfers: int


@dataclass(frozen=True)
class RegisterChange:
    """The device changes a register itself (a measurement, a status bit): from now on
    register `name` at `address` holds `value`, until the driver or the device changes it."""

    name: str
    address: int
    value: int

    def __repr__(self) -> str:
        return f"RegisterChange({self.name}({self.address:#04x}) = {self.value:#x})"


@dataclass(frozen=True)
class InterruptChange:
    """The device's interrupt output `line` (a name from the device's `gpios`) is asserted
    (at its active level) or released."""

    line: str
    asserted: bool


@dataclass(frozen=True)
class TransferFails:
    """The device's next transfer fails at message `at_message` (see the module's docstring:
    a NACK and an error are the same status on the wire)."""

    at_message: int


DeviceEvent = Pass | RegisterChange | InterruptChange | TransferFails
