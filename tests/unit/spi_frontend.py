"""The virtio-spi driver side for the fake frontend, laid out from the specification alone.

Source: the virtio specification's "SPI Controller Device" section (virtio 1.4 draft,
oasis-tcs/virtio-spec device-types/spi/description.tex), never roadtest.backend.spi: a
field the backend puts in the wrong place or order then fails a test instead of agreeing
with itself. Names are the specification's; every multi-byte field is little-endian.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Final

from fake_frontend import DriverQueue

VIRTIO_ID_SPI: Final = 45

# struct virtio_spi_config, field by field in the spec's order.
CONFIG_FIELDS: Final = (
    ("cs_max_number", "B"),
    ("cs_change_supported", "B"),
    ("tx_nbits_supported", "B"),
    ("rx_nbits_supported", "B"),
    ("bits_per_word_mask", "I"),
    ("mode_func_supported", "I"),
    ("max_freq_hz", "I"),
    ("max_word_delay_ns", "I"),
    ("max_cs_setup_ns", "I"),
    ("max_cs_hold_ns", "I"),
    ("max_cs_inactive_ns", "I"),
)
VIRTIO_SPI_CONFIG: Final = struct.Struct("<" + "".join(f for _, f in CONFIG_FIELDS))

# struct virtio_spi_transfer_head: five u8, u8 reserved[3], six le32.
VIRTIO_SPI_TRANSFER_HEAD: Final = struct.Struct("<5B3s6I")

VIRTIO_SPI_TRANS_OK: Final = 0
VIRTIO_SPI_PARAM_ERR: Final = 1
VIRTIO_SPI_TRANS_ERR: Final = 2

# mode bits of the head.
CPHA: Final = 1 << 0
CPOL: Final = 1 << 1
CS_HIGH: Final = 1 << 2
LSB_FIRST: Final = 1 << 3
LOOP: Final = 1 << 4

# mode_func_supported bits of the config.
MF_CPHA_0: Final = 1 << 0
MF_CPHA_1: Final = 1 << 1
MF_CPOL_0: Final = 1 << 2
MF_CPOL_1: Final = 1 << 3
MF_CS_HIGH: Final = 1 << 4
MF_LSB_FIRST: Final = 1 << 5
MF_LOOPBACK: Final = 1 << 6

# tx/rx_nbits_supported bits.
NBITS_DUAL: Final = 1 << 0
NBITS_QUAD: Final = 1 << 1
NBITS_OCTAL: Final = 1 << 2


def config(raw: bytes) -> dict[str, int]:
    """The config space's fields by name."""
    values = VIRTIO_SPI_CONFIG.unpack(raw[: VIRTIO_SPI_CONFIG.size])
    return {name: value for (name, _), value in zip(CONFIG_FIELDS, values, strict=True)}


@dataclass
class Xfer:
    """One transfer as a driver asks for it: `tx` bytes to send (None: no tx_buf), `rx`
    bytes to read (0: no rx_buf), and the head's fields."""

    cs: int = 0
    tx: bytes | None = None
    rx: int = 0
    bits_per_word: int = 8
    cs_change: int = 0
    tx_nbits: int = 0
    rx_nbits: int = 0
    mode: int = 0
    freq: int = 1_000_000
    word_delay_ns: int = 0
    cs_setup_ns: int = 0
    cs_delay_hold_ns: int = 0
    cs_change_delay_inactive_ns: int = 0
    reserved: bytes = field(default=bytes(3))

    def head(self) -> bytes:
        return VIRTIO_SPI_TRANSFER_HEAD.pack(
            self.cs,
            self.bits_per_word,
            self.cs_change,
            self.tx_nbits,
            self.rx_nbits,
            self.reserved,
            self.mode,
            self.freq,
            self.word_delay_ns,
            self.cs_setup_ns,
            self.cs_delay_hold_ns,
            self.cs_change_delay_inactive_ns,
        )


def queue(q: DriverQueue, xfer: Xfer, indirect: bool = False) -> int:
    """Make one transfer request available (head, tx_buf, rx_buf, result, in that order,
    as the spec's driver requirements say); returns its head descriptor."""
    out = [xfer.head()]
    if xfer.tx is not None:
        out.append(xfer.tx)
    ins = [xfer.rx, 1] if xfer.rx else [1]
    return q.add(out, ins, indirect=indirect)


def transfer(q: DriverQueue, *xfers: Xfer, indirect: bool = False) -> list[tuple[int, bytes]]:
    """Queue `xfers`, kick once, wait for all; (result, rx bytes) per transfer (rx only
    when the result is OK and there was an rx_buf)."""
    heads = [queue(q, x, indirect) for x in xfers]
    q.kick()
    done = {c.head: c for c in q.wait_used(len(heads))}
    results = []
    for head, x in zip(heads, xfers, strict=True):
        c = done[head]
        result = c.buffers[-1][-1]
        rx = c.buffers[0] if x.rx and result == VIRTIO_SPI_TRANS_OK else b""
        results.append((result, rx))
    return results
