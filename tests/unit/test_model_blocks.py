"""A model whose callback does not return is reported as that model, not as "the guest hung".

The backend serves the guest's devices on one thread: while a model's read sleeps, the
driver gets no answer and the test's agent request times out. That used to read
`GuestDied: the guest hung: guest agent did not answer within 30 s`, sending the user to
the kernel. The verdict now looks at the backend's thread when the request times out.
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from fake_frontend import FakeFrontend

from roadtest.backend.server import Backend
from roadtest.guest.client import AgentTimeout
from roadtest.models.base import SimpleSMBusModel
from roadtest.pytest_plugin import verdicts

ADDR = 0x20
TIMEOUT = AgentTimeout("guest agent did not answer within 2 s")


class Sleepy(SimpleSMBusModel):
    """Register 0x01 answers at once; a read of register 0x00 sleeps until released."""

    def __init__(self) -> None:
        super().__init__({0x00: 0x12, 0x01: 0x34})
        self.entered = threading.Event()
        self.release = threading.Event()

    def reg_read(self, addr: int) -> int:
        if addr == 0x00:
            self.entered.set()
            self.release.wait(30.0)  # past any short limit: the test releases it
        return super().reg_read(addr)


@pytest.fixture
def bus() -> Iterator[tuple[FakeFrontend, Sleepy]]:
    model = Sleepy()
    with tempfile.TemporaryDirectory(prefix="rt-blocks-") as d:
        with Backend(Path(d)) as backend:
            with FakeFrontend.connect(backend.i2c_socket) as fe:
                fe.setup(1)
                backend.i2c.attach(ADDR, model)
                try:
                    yield fe, model
                finally:
                    model.release.set()


def test_a_model_that_sleeps_in_its_read_is_named_not_the_guest(
    bus: tuple[FakeFrontend, Sleepy],
) -> None:
    fe, model = bus
    driver = threading.Thread(target=fe.i2c_transfer, args=([(ADDR, b"\x00"), (ADDR, 1)],))
    driver.start()
    try:
        assert model.entered.wait(10.0)
        guest = cast(Any, SimpleNamespace(console=None))
        verdict = verdicts.hang_or_death(guest, 0, TIMEOUT)
    finally:
        model.release.set()
        driver.join(10.0)
    assert isinstance(verdict, verdicts.ModelBlocked)
    headline, _, rest = str(verdict).partition("\n")
    assert headline == (
        f"the model Sleepy (i2c {ADDR:#04x}) did not return from read(1) -> _reg_bytes(0) -> "
        "reg_read(0), register 0x00: the backend's thread waits in it, so the driver got no "
        "answer (guest agent did not answer within 2 s); the guest did not hang"
    )
    assert rest.startswith("where the model waits:\n")
    assert "self.release.wait(30.0)" in rest  # the model's line it waits on


def test_a_backend_that_serves_is_not_blamed(bus: tuple[FakeFrontend, Sleepy]) -> None:
    fe, _ = bus
    assert fe.i2c_transfer([(ADDR, b"\x01"), (ADDR, 1)]) == [(0, b""), (0, b"\x34")]
    assert verdicts.blocked_model(TIMEOUT) is None  # idle: the guest itself hung
    guest = cast(Any, SimpleNamespace(console=None))
    verdict = verdicts.hang_or_death(guest, 0, TIMEOUT)
    assert isinstance(verdict, verdicts.GuestDied)
    assert str(verdict).startswith("the guest hung: guest agent did not answer within 2 s")
