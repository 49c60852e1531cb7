"""Numbers and byte layouts from the specifications, written out for the tests.

The fake frontend and the backend tests build and check bytes with these, never
with roadtest.backend's own constants: a layout or number the backend gets wrong
then fails a test instead of agreeing with itself. Names are the specifications'.

Sources:
- vhost-user: QEMU docs/interop/vhost-user.rst ("Message specification",
  "Front-end message types", "Protocol features");
- split virtqueue: virtio 1.x, "Split Virtqueues" (struct virtq_desc,
  virtq_avail, virtq_used), and linux include/uapi/linux/virtio_ring.h;
- feature bits: virtio 1.x "Reserved Feature Bits", linux
  include/uapi/linux/virtio_config.h and vhost_types.h;
- virtio-i2c: virtio 1.x "I2C Adapter Device", include/uapi/linux/virtio_i2c.h;
- virtio-gpio: virtio 1.x "GPIO Device", include/uapi/linux/virtio_gpio.h.
All multi-byte fields are little-endian.
"""

from __future__ import annotations

import struct
from typing import Final

# vhost-user message header: u32 request, u32 flags, u32 size (of the payload).
VHOST_USER_HEADER: Final = struct.Struct("<III")

# Header flags: bits 0-1 the version (1), bit 2 reply, bit 3 need_reply.
VHOST_USER_VERSION: Final = 0x1
VHOST_USER_FLAG_REPLY: Final = 0x4
VHOST_USER_FLAG_NEED_REPLY: Final = 0x8
VHOST_USER_REPLY_FLAGS: Final = VHOST_USER_VERSION | VHOST_USER_FLAG_REPLY  # on every reply

# Front-end message types.
VHOST_USER_GET_FEATURES: Final = 1
VHOST_USER_SET_FEATURES: Final = 2
VHOST_USER_SET_OWNER: Final = 3
VHOST_USER_RESET_OWNER: Final = 4
VHOST_USER_SET_MEM_TABLE: Final = 5
VHOST_USER_SET_LOG_BASE: Final = 6
VHOST_USER_SET_LOG_FD: Final = 7
VHOST_USER_SET_VRING_NUM: Final = 8
VHOST_USER_SET_VRING_ADDR: Final = 9
VHOST_USER_SET_VRING_BASE: Final = 10
VHOST_USER_GET_VRING_BASE: Final = 11
VHOST_USER_SET_VRING_KICK: Final = 12
VHOST_USER_SET_VRING_CALL: Final = 13
VHOST_USER_SET_VRING_ERR: Final = 14
VHOST_USER_GET_PROTOCOL_FEATURES: Final = 15
VHOST_USER_SET_PROTOCOL_FEATURES: Final = 16
VHOST_USER_GET_QUEUE_NUM: Final = 17
VHOST_USER_SET_VRING_ENABLE: Final = 18
VHOST_USER_SET_BACKEND_REQ_FD: Final = 21  # was VHOST_USER_SET_SLAVE_REQ_FD
VHOST_USER_GET_CONFIG: Final = 24
VHOST_USER_SET_CONFIG: Final = 25
VHOST_USER_VRING_KICK: Final = 35

# Back-end message types (on the SET_BACKEND_REQ_FD channel).
VHOST_USER_BACKEND_VRING_CALL: Final = 4  # was VHOST_USER_SLAVE_VRING_CALL

# Payloads.
VHOST_USER_U64: Final = struct.Struct("<Q")
VHOST_USER_VRING_STATE: Final = struct.Struct("<II")  # index, num
# index, flags, descriptor table, used ring, available ring (frontend addresses), log
VHOST_USER_VRING_ADDR: Final = struct.Struct("<IIQQQQ")
VHOST_USER_MEMORY: Final = struct.Struct("<II")  # number of regions, padding
# guest address, size, user address, mmap offset
VHOST_USER_MEMORY_REGION: Final = struct.Struct("<QQQQ")
VHOST_USER_CONFIG: Final = struct.Struct("<III")  # offset, size, flags; then the bytes
# A vring descriptor-file u64: bits 0-7 the index, bit 8 "invalid FD" (no fd sent).
VHOST_USER_VRING_IDX_MASK: Final = 0xFF
VHOST_USER_VRING_NOFD_MASK: Final = 1 << 8

# Protocol features (GET/SET_PROTOCOL_FEATURES), as masks of their bit numbers.
VHOST_USER_PROTOCOL_F_MQ: Final = 1 << 0
VHOST_USER_PROTOCOL_F_REPLY_ACK: Final = 1 << 3
VHOST_USER_PROTOCOL_F_BACKEND_REQ: Final = 1 << 5  # was ..._F_SLAVE_REQ
VHOST_USER_PROTOCOL_F_CONFIG: Final = 1 << 9
VHOST_USER_PROTOCOL_F_INBAND_NOTIFICATIONS: Final = 1 << 14

# Feature bits (GET/SET_FEATURES), as masks.
VIRTIO_RING_F_INDIRECT_DESC: Final = 1 << 28
VIRTIO_RING_F_EVENT_IDX: Final = 1 << 29
VHOST_USER_F_PROTOCOL_FEATURES: Final = 1 << 30
VIRTIO_F_VERSION_1: Final = 1 << 32

# Split virtqueue. struct virtq_desc { le64 addr; le32 len; le16 flags; le16 next; }
VIRTQ_DESC: Final = struct.Struct("<QIHH")
VIRTQ_DESC_F_NEXT: Final = 1
VIRTQ_DESC_F_WRITE: Final = 2
VIRTQ_DESC_F_INDIRECT: Final = 4
# struct virtq_avail { le16 flags; le16 idx; le16 ring[N]; le16 used_event; }
LE16: Final = struct.Struct("<H")
VIRTQ_AVAIL_F_NO_INTERRUPT: Final = 1
# struct virtq_used { le16 flags; le16 idx; struct virtq_used_elem ring[N]; le16 avail_event; }
# struct virtq_used_elem { le32 id; le32 len; }
VIRTQ_USED_ELEM: Final = struct.Struct("<II")
VIRTQ_USED_F_NO_NOTIFY: Final = 1


def avail_size(num: int) -> int:
    """Bytes of a `num`-entry available ring, used_event included."""
    return 2 + 2 + 2 * num + 2


def used_size(num: int) -> int:
    """Bytes of a `num`-entry used ring, avail_event included."""
    return 2 + 2 + VIRTQ_USED_ELEM.size * num + 2


# virtio-i2c. struct virtio_i2c_out_hdr { le16 addr; le16 padding; le32 flags; }
# addr is the 7-bit address shifted left by one; the in header is one status byte.
VIRTIO_ID_I2C_ADAPTER: Final = 34
VIRTIO_I2C_F_ZERO_LENGTH_REQUEST: Final = 1 << 0
VIRTIO_I2C_OUT_HDR: Final = struct.Struct("<HHI")
VIRTIO_I2C_FLAGS_FAIL_NEXT: Final = 1 << 0
VIRTIO_I2C_FLAGS_M_RD: Final = 1 << 1
VIRTIO_I2C_MSG_OK: Final = 0
VIRTIO_I2C_MSG_ERR: Final = 1

# virtio-gpio.
VIRTIO_ID_GPIO: Final = 41
VIRTIO_GPIO_F_IRQ: Final = 1 << 0
# struct virtio_gpio_config { le16 ngpio; u8 padding[2]; le32 gpio_names_size; }
VIRTIO_GPIO_CONFIG: Final = struct.Struct("<HxxI")
# struct virtio_gpio_request { le16 type; le16 gpio; le32 value; }
VIRTIO_GPIO_REQUEST: Final = struct.Struct("<HHI")
# struct virtio_gpio_response { u8 status; u8 value; }
VIRTIO_GPIO_RESPONSE: Final = struct.Struct("<BB")
# struct virtio_gpio_irq_request { le16 gpio; }; the response is one status byte.
VIRTIO_GPIO_IRQ_REQUEST: Final = struct.Struct("<H")
VIRTIO_GPIO_MSG_GET_NAMES: Final = 0x0001
VIRTIO_GPIO_MSG_GET_DIRECTION: Final = 0x0002
VIRTIO_GPIO_MSG_SET_DIRECTION: Final = 0x0003
VIRTIO_GPIO_MSG_GET_VALUE: Final = 0x0004
VIRTIO_GPIO_MSG_SET_VALUE: Final = 0x0005
VIRTIO_GPIO_MSG_IRQ_TYPE: Final = 0x0006
VIRTIO_GPIO_STATUS_OK: Final = 0x0
VIRTIO_GPIO_STATUS_ERR: Final = 0x1
VIRTIO_GPIO_DIRECTION_NONE: Final = 0x00
VIRTIO_GPIO_DIRECTION_OUT: Final = 0x01
VIRTIO_GPIO_DIRECTION_IN: Final = 0x02
VIRTIO_GPIO_IRQ_TYPE_NONE: Final = 0x00
VIRTIO_GPIO_IRQ_TYPE_EDGE_RISING: Final = 0x01
VIRTIO_GPIO_IRQ_TYPE_EDGE_FALLING: Final = 0x02
VIRTIO_GPIO_IRQ_TYPE_EDGE_BOTH: Final = 0x03
VIRTIO_GPIO_IRQ_TYPE_LEVEL_HIGH: Final = 0x04
VIRTIO_GPIO_IRQ_TYPE_LEVEL_LOW: Final = 0x08
VIRTIO_GPIO_IRQ_STATUS_INVALID: Final = 0x0
VIRTIO_GPIO_IRQ_STATUS_VALID: Final = 0x1
