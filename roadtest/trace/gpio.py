"""virtio-gpio's line directions and interrupt types (virtio spec 1.2+, section 5.17;
include/uapi/linux/virtio_gpio.h): VIRTIO_GPIO_DIRECTION_* and VIRTIO_GPIO_IRQ_TYPE_*.

A trace holds them verbatim, as the driver sent them: the backend serves them,
and `roadtest trace show` and replay reports print them by these names.
"""

from __future__ import annotations

import enum
from typing import Final

# The highest line number: struct virtio_gpio_request's `gpio` is a __le16.
MAX_LINE: Final = 0xFFFF


class Direction(enum.IntEnum):
    NONE = 0x00
    OUT = 0x01
    IN = 0x02


class IrqType(enum.IntEnum):
    NONE = 0x00
    EDGE_RISING = 0x01
    EDGE_FALLING = 0x02
    EDGE_BOTH = 0x03
    LEVEL_HIGH = 0x04
    LEVEL_LOW = 0x08
