"""I2C on the test side: addresses 0x08-0x77, fragments under the virtio I2C adapter's node,
and what answers for a device attached at its address on the backend's virtio-i2c bus."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from roadtest.errors import RoadtestError
from roadtest.testing.bus import TestBus

if TYPE_CHECKING:
    from roadtest.backend.i2c_transfer import BusTarget
    from roadtest.backend.server import Backend
    from roadtest.guest.client import AgentClient
    from roadtest.testing.devicetree import Parent

# 7-bit addresses a session hands out; 0x00-0x07 and 0x78-0x7f are reserved by the I2C spec.
I2C_ADDRESSES = range(0x08, 0x78)


class I2CTestBus(TestBus):
    name: ClassVar[str] = "i2c"
    sysfs: ClassVar[str] = "i2c"
    dt_parent: ClassVar[Parent] = "i2c"
    addresses: ClassVar[range | None] = I2C_ADDRESSES
    virtio_device_id: ClassVar[int | None] = 34  # virtio-i2c

    def __init__(self) -> None:
        self.adapter = -1  # the guest's virtio I2C adapter: i2c-N

    def discover(self, agent: AgentClient) -> None:
        adapters = [n for n in agent.listdir("/sys/bus/i2c/devices") if n.startswith("i2c-")]
        if not adapters:
            raise RoadtestError("the guest has no virtio I2C adapter")
        self.adapter = int(adapters[0].removeprefix("i2c-"))

    def sysfs_name(self, addr: int | None, node_name: str) -> str:
        assert addr is not None
        return f"{self.adapter}-{addr:04x}"

    def attach(self, backend: Backend, addr: int, target: BusTarget) -> None:
        handler, observer = target
        backend.i2c.attach(addr, handler, observer)

    def detach(self, backend: Backend, addr: int) -> None:
        backend.i2c.detach(addr)
