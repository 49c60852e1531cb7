"""The recorder writes what crossed the bus: every request shape, through the backend
and its fake frontend.

Expected statuses are the virtio-i2c spec's (include/uapi/linux/virtio_i2c.h):
VIRTIO_I2C_MSG_OK 0, VIRTIO_I2C_MSG_ERR 1, and once a request of a group fails, the
device fails every later request of that group (VIRTIO_I2C_FLAGS_FAIL_NEXT, bit 0,
set on all but the last); VIRTIO_I2C_FLAGS_M_RD is bit 1.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fake_frontend import FakeFrontend

from roadtest.backend.server import Backend
from roadtest.models.base import SimpleSMBusModel
from roadtest.recorder.recording import RecordingHooks
from roadtest.trace.format import load_trace
from roadtest.trace.names import TracedDevice

OK, ERR = 0, 1
FAIL_NEXT, M_RD = 1 << 0, 1 << 1
ADDR = 0x20
DEVICE = TracedDevice("acme,chip", ADDR, "test_wire.CHIP")
TEST = "tests/drivers/test_wire.py::test_wire"


class Chip(SimpleSMBusModel):
    """Registers 0x00 = 0x12 and 0x01 = 0x34; any other register is refused (NACK)."""

    def __init__(self) -> None:
        super().__init__({0x00: 0x12, 0x01: 0x34})


@dataclass
class Recorded:
    backend: Backend
    fe: FakeFrontend
    hooks: RecordingHooks
    out: Path

    def xfer(self, *msgs: tuple[int, bytes | int]) -> list[tuple[int, bytes]]:
        return self.fe.i2c_transfer(list(msgs))

    def transfers(self) -> list[list[tuple[int, int, bytes, int]]]:
        """The i2c events of the trace: (flags, len, data, status) per message."""
        self.hooks.detached(DEVICE)
        (path,) = self.out.rglob("*.rtrace")
        _, events = load_trace(path)
        return [
            [(m["flags"], m["len"], m["data"], m["status"]) for m in e["msgs"]]
            for e in events
            if e["kind"] == "i2c"
        ]


@pytest.fixture
def rec() -> Iterator[Recorded]:
    with tempfile.TemporaryDirectory(prefix="rt-wire-") as d:
        with Backend(Path(d)) as backend:
            with FakeFrontend.connect(backend.i2c_socket) as fe:
                fe.setup(1)
                hooks = RecordingHooks(Path(d) / "traces", "k")
                handler, observer = hooks.attached(TEST, DEVICE, Chip(), {})
                backend.i2c.attach(ADDR, handler, observer)
                yield Recorded(backend, fe, hooks, Path(d) / "traces")


# (request messages, statuses the driver gets, the trace's messages)
SHAPES: dict[str, tuple[list[tuple[int, bytes | int]], list[int], list[Any]]] = {
    "single write": ([(ADDR, b"\x00\x55")], [OK], [(0, 2, b"\x00\x55", OK)]),
    "single read": ([(ADDR, 1)], [OK], [(M_RD, 1, b"\x12", OK)]),
    "write+read": (
        [(ADDR, b"\x01"), (ADDR, 1)],
        [OK, OK],
        [(FAIL_NEXT, 1, b"\x01", OK), (M_RD, 1, b"\x34", OK)],
    ),
    "multi-message": (
        [(ADDR, b"\x00"), (ADDR, 2), (ADDR, b"\x01\x99")],
        [OK, OK, OK],
        [
            (FAIL_NEXT, 1, b"\x00", OK),
            (FAIL_NEXT | M_RD, 2, b"\x12\x34", OK),
            (0, 2, b"\x01\x99", OK),
        ],
    ),
    "zero-length write": ([(ADDR, b"")], [OK], [(0, 0, b"", OK)]),
    "zero-length read": ([(ADDR, 0)], [OK], [(M_RD, 0, b"", OK)]),
    # The case the recorder used to lose: the write is refused, the read is skipped, and
    # both fail on the wire; the trace held one message, flags 0, and no read.
    "refused write, skipped read": (
        [(ADDR, b"\x10\x01"), (ADDR, 1)],
        [ERR, ERR],
        [(FAIL_NEXT, 2, b"\x10\x01", ERR), (M_RD, 1, b"", ERR)],
    ),
    "FAIL_NEXT chain failing in the middle": (
        [(ADDR, b"\x00"), (ADDR, 1), (ADDR, b"\x10"), (ADDR, 1), (ADDR, b"\x01")],
        [OK, OK, OK, ERR, ERR],
        [
            (FAIL_NEXT, 1, b"\x00", OK),
            (FAIL_NEXT | M_RD, 1, b"\x12", OK),
            (FAIL_NEXT, 1, b"\x10", OK),
            (FAIL_NEXT | M_RD, 1, b"", ERR),  # register 0x10 is refused
            (0, 1, b"\x01", ERR),  # skipped
        ],
    ),
}


@pytest.mark.parametrize("shape", SHAPES)
def test_the_trace_holds_what_crossed_the_bus(rec: Recorded, shape: str) -> None:
    msgs, statuses, recorded = SHAPES[shape]
    wire = rec.xfer(*msgs)
    assert [status for status, _ in wire] == statuses
    reads = [
        data
        for (status, data), (_, m) in zip(wire, msgs, strict=True)
        if isinstance(m, int) and not status
    ]
    assert reads == [m[2] for m in recorded if m[0] & M_RD and m[3] == OK]
    assert rec.transfers() == [recorded]


def test_a_model_fault_names_the_chip_model(rec: Recorded) -> None:
    rec.xfer((ADDR, b"\x10\x01"), (ADDR, 1))
    (error,) = rec.backend.errors
    assert error.kind == "model"
    assert error.where == "i2c 0x20 Chip.write(b'\\x10\\x01')"
    assert "unknown register 0x10" in str(error)


def test_each_group_is_one_transfer_and_the_next_starts_clean(rec: Recorded) -> None:
    rec.xfer((ADDR, b"\x10"), (ADDR, 1))
    rec.xfer((ADDR, b"\x00"), (ADDR, 1))
    assert rec.transfers() == [
        [(FAIL_NEXT, 1, b"\x10", OK), (M_RD, 1, b"", ERR)],
        [(FAIL_NEXT, 1, b"\x00", OK), (M_RD, 1, b"\x12", OK)],
    ]
