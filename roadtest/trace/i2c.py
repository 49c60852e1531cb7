"""virtio-i2c's message flags and statuses (include/uapi/linux/virtio_i2c.h).

They are what crosses the bus, and a trace holds them verbatim: the backend
reads and writes them on the wire, the recorder stores them, and replay and
`roadtest trace show` read them back. Written here once for all of those.
"""

from __future__ import annotations

from typing import Final

VIRTIO_I2C_FLAGS_FAIL_NEXT: Final = 1 << 0  # not the last request of its transfer
VIRTIO_I2C_FLAGS_M_RD: Final = 1 << 1  # a read
VIRTIO_I2C_MSG_OK: Final = 0
VIRTIO_I2C_MSG_ERR: Final = 1

# The longest message: virtio-i2c's Linux driver passes each struct i2c_msg on as one
# request, and its length is a __u16 (include/uapi/linux/i2c.h). (i2c-dev's I2C_RDWR
# allows userspace at most 8192 bytes a message; drivers in the kernel may go to this.)
I2C_MSG_MAX_LEN: Final = 0xFFFF
