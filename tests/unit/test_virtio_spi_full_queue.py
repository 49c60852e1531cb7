"""A message longer than the virtqueue, against the fake frontend (requests laid out from
the specification by spi_frontend, never by roadtest.backend.spi).

The specification gives a message's transfers no end marker: `cs_change` 0 keeps the chip
select asserted "before starting the next SPI transfer", 1 deasserts it. A driver whose
message has more transfers than the ring holds sends them in turns, waiting for each
turn's answers. What the device does (roadtest/backend/spi.py's docstring): a kick that
left no room for another request and ended without cs_change keeps its chip select held
into the next kick, whose first transfer to that chip select continues the message.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import spi_frontend as spi
from spi_frontend import Xfer
from test_virtio_spi import Served, serve

from roadtest.backend.spi import VirtioSpi
from roadtest.models import SPIModel

RING = 64  # the fake frontend's queue size


class Chip(SPIModel):
    """Logs select, each transfer's first TX byte, and deselect; answers TX + 1. Raises
    at the transfer whose TX is `raise_on`."""

    def __init__(self, raise_on: int | None = None) -> None:
        self.calls: list[str | int] = []
        self.raise_on = raise_on

    def select(self) -> None:
        self.calls.append("select")

    def deselect(self) -> None:
        self.calls.append("deselect")

    def transfer(self, tx: bytes | None, length: int, mode: int, bits_per_word: int) -> bytes:
        assert tx is not None
        if tx[0] == self.raise_on:
            raise RuntimeError("the chip broke")
        self.calls.append(tx[0])
        return bytes([(tx[0] + 1) & 0xFF])


@pytest.fixture
def env() -> Iterator[Served]:
    yield from serve(VirtioSpi())


def writes(first: int, count: int, cs: int = 0) -> list[Xfer]:
    return [Xfer(cs=cs, tx=bytes([(first + i) & 0xFF]), rx=1) for i in range(count)]


def messages(calls: list[str | int]) -> list[list[int]]:
    """The chip's calls as messages (each the TX bytes between a select and a deselect);
    fails on a transfer outside one, or a select inside one."""
    found: list[list[int]] = []
    current: list[int] | None = None
    for call in calls:
        if call == "select":
            assert current is None, "selected twice"
            current = []
        elif call == "deselect":
            assert current is not None, "deselected while not selected"
            found.append(current)
            current = None
        else:
            assert current is not None and isinstance(call, int), "a transfer while deselected"
            current.append(call)
    assert current is None, "still selected"
    return found


@pytest.mark.parametrize("indirect", [True, False], ids=["indirect", "direct"])
def test_a_message_longer_than_the_ring_reaches_the_chip_whole(env: Served, indirect: bool) -> None:
    # Indirect: one descriptor a request, the ring full at 64. Direct: head, tx_buf,
    # rx_buf, result are four descriptors, the ring full at 16.
    turn = RING if indirect else RING // 4
    chip = Chip()
    env.device.attach(0, chip)
    first = env.xfer(*writes(0, turn), indirect=indirect)
    assert chip.calls[0] == "select" and "deselect" not in chip.calls  # still selected
    rest = env.xfer(*writes(turn, 10), indirect=indirect)  # fits: the message's end
    assert [rx for _, rx in first + rest] == [bytes([i + 1]) for i in range(turn + 10)]
    assert all(result == spi.VIRTIO_SPI_TRANS_OK for result, _ in first + rest)
    assert messages(chip.calls) == [list(range(turn + 10))]


def test_a_ring_filled_over_several_turns_is_one_message(env: Served) -> None:
    chip = Chip()
    env.device.attach(0, chip)
    for i in range(3):
        env.xfer(*writes(RING * i, RING), indirect=True)
    env.xfer(*writes(RING * 3, 1), indirect=True)
    assert messages(chip.calls) == [[i & 0xFF for i in range(RING * 3 + 1)]]


def test_a_kick_with_room_left_ends_its_message(env: Served) -> None:
    chip = Chip()
    env.device.attach(0, chip)
    env.xfer(*writes(0, RING - 1), indirect=True)
    env.xfer(*writes(100, 2), indirect=True)
    assert messages(chip.calls) == [list(range(RING - 1)), [100, 101]]


def test_cs_change_on_the_last_transfer_of_a_full_ring_ends_the_message(env: Served) -> None:
    chip = Chip()
    env.device.attach(0, chip)
    xfers = writes(0, RING)
    xfers[-1].cs_change = 1
    env.xfer(*xfers, indirect=True)
    assert chip.calls[-1] == "deselect"
    env.xfer(*writes(200, 1), indirect=True)
    assert messages(chip.calls) == [list(range(RING)), [200]]


def test_another_chip_select_releases_the_held_one_first(env: Served) -> None:
    a, b = Chip(), Chip()
    env.device.attach(0, a)
    env.device.attach(1, b)
    env.xfer(*writes(0, RING, cs=0), indirect=True)
    env.xfer(*writes(100, 1, cs=1), indirect=True)
    assert messages(a.calls) == [list(range(RING))]
    assert messages(b.calls) == [[100]]
    # And a later transfer on the first chip select is a new message.
    env.xfer(*writes(150, 1, cs=0), indirect=True)
    assert messages(a.calls) == [list(range(RING)), [150]]


def test_what_the_device_cannot_tell_a_full_ring_then_a_new_message_is_one(
    env: Served,
) -> None:
    # The cost of the choice (the module docstring): a message of exactly a full ring and
    # a new message to the same chip select in the next kick look like one message in two
    # turns; nothing in the requests tells them apart.
    chip = Chip()
    env.device.attach(0, chip)
    env.xfer(*writes(0, RING), indirect=True)
    env.xfer(*writes(100, 1), indirect=True)
    assert messages(chip.calls) == [[*range(RING), 100]]


def test_a_failed_transfer_releases_the_chip_select(env: Served) -> None:
    # The driver fails the message at the first TRANS_ERR and sends no more of it.
    chip = Chip(raise_on=RING - 1)
    env.device.attach(0, chip)
    answers = env.xfer(*writes(0, RING), indirect=True)
    assert answers[-1] == (spi.VIRTIO_SPI_TRANS_ERR, b"")
    assert chip.calls[-1] == "deselect"
    env.xfer(*writes(100, 1), indirect=True)
    assert messages(chip.calls) == [list(range(RING - 1)), [100]]


def test_a_refused_transfer_after_a_held_part_releases_it(env: Served) -> None:
    chip = Chip()
    env.device.attach(0, chip)
    env.xfer(*writes(0, RING), indirect=True)
    (answer,) = env.xfer(Xfer(cs=0, tx=b"\x01", rx=1, tx_nbits=3), indirect=True)
    assert answer[0] == spi.VIRTIO_SPI_PARAM_ERR
    assert messages(chip.calls) == [list(range(RING))]


def test_detaching_releases_a_held_chip_select(env: Served) -> None:
    chip = Chip()
    env.device.attach(0, chip)
    env.xfer(*writes(0, RING), indirect=True)
    assert env.device.detach(0) is chip
    assert messages(chip.calls) == [list(range(RING))]
