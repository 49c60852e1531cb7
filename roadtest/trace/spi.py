"""virtio-spi's results, mode bits and lane counts (the virtio specification's "SPI Controller
Device" section, virtio 1.4 draft, oasis-tcs/virtio-spec device-types/spi/description.tex).

They are what crosses the bus, and a trace holds them verbatim: the backend
(roadtest.backend.spi) reads and writes them on the wire, the recorder stores them (as
roadtest.backend.spi.spi_xfers lays out a message's transfers), and replay and `roadtest
trace show` read them back. Written here once for all of those.
"""

from __future__ import annotations

from typing import Final

# The transfer head's `mode` bits and the words' width in memory: the model API's too
# (SPIModel.transfer takes them), so they are defined there, and named here as well.
from roadtest.models.base import VIRTIO_SPI_CPHA as VIRTIO_SPI_CPHA
from roadtest.models.base import VIRTIO_SPI_CPOL as VIRTIO_SPI_CPOL
from roadtest.models.base import VIRTIO_SPI_CS_HIGH as VIRTIO_SPI_CS_HIGH
from roadtest.models.base import VIRTIO_SPI_MODE_LOOP as VIRTIO_SPI_MODE_LOOP
from roadtest.models.base import VIRTIO_SPI_MODE_LSB_FIRST as VIRTIO_SPI_MODE_LSB_FIRST
from roadtest.models.base import word_bytes as word_bytes

# struct virtio_spi_transfer_result's `result`.
VIRTIO_SPI_TRANS_OK: Final = 0
VIRTIO_SPI_PARAM_ERR: Final = 1
VIRTIO_SPI_TRANS_ERR: Final = 2

MODE_BITS: Final = 0x1F  # the bits the spec defines; a head with others is refused
MODE_NAMES: Final = (
    (VIRTIO_SPI_CS_HIGH, "CS_HIGH"),
    (VIRTIO_SPI_MODE_LSB_FIRST, "LSB_FIRST"),
    (VIRTIO_SPI_MODE_LOOP, "LOOP"),
)

# The head's tx_nbits / rx_nbits: 0 and 1 are SINGLE, then DUAL, QUAD, OCTAL.
NBITS: Final = frozenset({0, 1, 2, 4, 8})

# The chip select is the head's u8 chip_select_id.
MAX_CS: Final = 0xFF

# A transfer of a trace holds at most this many bytes each way: the trace reader's limit
# on one bin value (roadtest.trace.format.MAX_EVENT_BYTES). virtio-spi itself bounds a
# transfer by the descriptors' le32 lengths only.
SPI_XFER_MAX_LEN: Final = 1 << 20


def spi_mode(mode: int) -> str:
    """A mode as people name it: "mode 0".."mode 3" (CPOL, CPHA), then the other bits."""
    number = (2 if mode & VIRTIO_SPI_CPOL else 0) | (1 if mode & VIRTIO_SPI_CPHA else 0)
    names = [name for bit, name in MODE_NAMES if mode & bit]
    rest = mode & ~MODE_BITS
    if rest:
        names.append(f"{rest:#x}")
    return " ".join([f"mode {number}", *names])
