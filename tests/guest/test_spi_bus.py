"""The virtio SPI bus end to end (kernel-patches/spi: the guest's spi-virtio controller;
roadtest/backend/spi.py: the device), through spidev, the kernel's raw SPI interface: the
guest's userspace sends SPI_IOC_MESSAGE (Documentation/spi/spidev.rst), the controller puts
each transfer on the virtio queue, and the chip's model on the chip select answers.

What the two sides agree on, from the virtio specification's SPI section: a message's
transfers reach the chip with its chip select held, in order, each with its TX bytes and
as many RX bytes as it asked for; full duplex; cs_change; a message of many transfers
arrives whole; and a transfer the device fails (TRANS_ERR) is an EIO for the sender (the
driver's errno for it).
"""

from __future__ import annotations

import json
import threading

import pytest

from roadtest.fuzz.events import TransferFails
from roadtest.models.base import SPIModel
from roadtest.testing import RoadtestSession, SPIDevice

# struct spi_ioc_transfer (include/uapi/linux/spi/spidev.h): tx_buf, rx_buf (u64), len,
# speed_hz (u32), delay_usecs (u16), bits_per_word, cs_change, tx_nbits, rx_nbits,
# word_delay_usecs, pad (u8); SPI_IOC_MESSAGE(n) is _IOW('k', 0, char[n * 32]).
GUEST_SENDS = r"""
import ctypes, fcntl, json, os, struct, sys

XFER = struct.Struct("QQIIHBBBBBB")
fd = os.open(sys.argv[1], os.O_RDWR)
keep = []

def message(transfers):
    raw = b""
    rx = []
    for tx, length, cs_change in transfers:
        t = ctypes.create_string_buffer(bytes.fromhex(tx), length) if tx else None
        r = ctypes.create_string_buffer(length)
        keep.extend([t, r])
        rx.append(r)
        raw += XFER.pack(ctypes.addressof(t) if t else 0, ctypes.addressof(r), length,
                         0, 0, 8, cs_change, 0, 0, 0, 0)
    request = (1 << 30) | (len(raw) << 16) | (ord("k") << 8)
    try:
        fcntl.ioctl(fd, request, ctypes.create_string_buffer(raw, len(raw)))
    except OSError as err:
        return err.errno
    return [r.raw.hex() for r in rx]

print(json.dumps([message(m) for m in json.loads(sys.argv[2])]))
"""


class Echo(SPIModel):
    """Answers each byte shifted in with its complement; a read without TX (the host
    sending nothing it cares about) with 0, 1, 2, ... Logs every message as the list of
    its transfers (tx or None, length)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.messages: list[list[tuple[bytes | None, int]]] = []
        self.selected = False

    def select(self) -> None:
        assert not self.selected, "selected twice without a release"
        self.selected = True
        with self.lock:
            self.messages.append([])

    def deselect(self) -> None:
        self.selected = False

    def transfer(self, tx: bytes | None, length: int, mode: int, bits_per_word: int) -> bytes:
        with self.lock:
            self.messages[-1].append((tx, length))
        return bytes(b ^ 0xFF for b in tx) if tx else bytes(range(length))


SPIDEV = SPIDevice(
    compatible="rohm,dh2228fv",  # in spidev's table of compatibles
    model=Echo,
    dts="""
        spidev@$addr$ {
            compatible = "rohm,dh2228fv";
            reg = <$addr$>;
            spi-max-frequency = <1000000>;
        };
    """,
)

Message = list[tuple[str | None, int, int]]  # (tx hex or None, length, cs_change)


def send(guest: RoadtestSession, dev_path: str, messages: list[Message]) -> list[object]:
    node = guest.agent.listdir(f"{dev_path}/spidev")[0]
    status, out, err = guest.agent.run(
        ["python3", "-c", GUEST_SENDS, f"/dev/{node}", json.dumps(messages)]
    )
    assert status == 0, err.decode()
    result: list[object] = json.loads(out)
    return result


def test_a_write_then_read_is_one_message_with_the_chip_select_held(
    guest: RoadtestSession,
) -> None:
    with guest.bound(SPIDEV) as dev:
        (answer,) = send(guest, str(dev.path), [[("010203", 3, 0), (None, 4, 0)]])
        assert answer == ["fefdfc", "00010203"]
        assert dev.model.messages == [[(b"\x01\x02\x03", 3), (None, 4)]]


def test_cs_change_ends_a_message_at_the_chip(guest: RoadtestSession) -> None:
    # spidev.rst: cs_change set on a transfer that is not the last deselects the chip after
    # it; the next transfer selects it again: two messages at the chip.
    with guest.bound(SPIDEV) as dev:
        (answer,) = send(guest, str(dev.path), [[("a0", 1, 1), ("b0b1", 2, 0)]])
        assert answer == ["5f", "4f4e"]
        assert dev.model.messages == [[(b"\xa0", 1)], [(b"\xb0\xb1", 2)]]


@pytest.mark.parametrize("count", [200, 256, 300, 511])
def test_a_message_of_many_transfers_arrives_whole(guest: RoadtestSession, count: int) -> None:
    # The virtqueue holds 256 requests (one descriptor each: indirect tables). A message
    # longer than that is sent in turns by the driver, chip select held, and the device
    # keeps a message open across a kick that filled the ring (roadtest/backend/spi.py):
    # the chip sees one message. 511 is spidev's most: SPI_IOC_MESSAGE's size field has
    # 14 bits, 16383 bytes of 32-byte spi_ioc_transfers (include/uapi/linux/spi/spidev.h);
    # its 511 bytes are within spidev's bufsiz (4096).
    transfers: Message = [(f"{i & 0xFF:02x}", 1, 0) for i in range(count)]
    with guest.bound(SPIDEV) as dev:
        (answer,) = send(guest, str(dev.path), [transfers])
        assert answer == [f"{~i & 0xFF:02x}" for i in range(count)]
        # A message of exactly the ring's 256 stays open (the device cannot tell that it
        # ended) until the chip select's next message, another's, or the detach.
        assert [len(m) for m in dev.model.messages] == [count]


@pytest.mark.parametrize("failing", [0, 1])
def test_a_transfer_the_device_fails_is_an_eio(guest: RoadtestSession, failing: int) -> None:
    # The script's failed "transfer" is the chip's next message; its "message" the transfer
    # of it that fails (roadtest.fuzz.events).
    with guest.device_events([TransferFails(at_message=failing)]), guest.bound(SPIDEV) as dev:
        answers = send(guest, str(dev.path), [[("11", 1, 0), ("22", 1, 0)], [("33", 1, 0)]])
        assert answers[0] == 5  # EIO
    # the bus goes on: the next message gets through
    assert answers[1] == ["cc"]
