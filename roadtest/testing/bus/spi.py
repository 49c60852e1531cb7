"""SPI on the test side: chip selects 0..cs_max_number-1, fragments under the virtio SPI
controller's node, and what answers for a device attached on its chip select on the
backend's virtio-spi bus.

The guest's virtio-spi driver gives its controller the virtio device's devicetree node
(as i2c-virtio does its adapter), so a child node with `reg = <cs>` becomes the SPI
device spiB.C, B the controller's bus number, C the chip select. A guest whose kernel has
no virtio-spi driver (6.12 without kernel-patches/spi/) or whose machine cannot carry the
device (x86_64 under QEMU: MachineType.cannot_carry) has no controller: discover() notes
that, and naming a device on it says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from roadtest.backend.spi import DEFAULT_CS_MAX, VIRTIO_ID_SPI, VirtioSpi
from roadtest.errors import RoadtestError
from roadtest.testing.bus import TestBus

if TYPE_CHECKING:
    from roadtest.backend.server import Backend
    from roadtest.backend.spi_transfer import SPITarget
    from roadtest.guest.client import AgentClient
    from roadtest.testing.devicetree import Parent

SPI_MASTERS = "/sys/class/spi_master"


class SPITestBus(TestBus):
    name: ClassVar[str] = "spi"
    sysfs: ClassVar[str] = "spi"
    dt_parent: ClassVar[Parent] = "spi"
    addresses: ClassVar[range | None] = range(DEFAULT_CS_MAX)
    virtio_device_id: ClassVar[int | None] = VIRTIO_ID_SPI

    def __init__(self) -> None:
        self.bus_number = -1  # the guest's virtio SPI controller: spiB (-1: none found)

    def discover(self, agent: AgentClient) -> None:
        masters = agent.listdir(SPI_MASTERS) if agent.exists(SPI_MASTERS) else []
        numbers = sorted(int(n.removeprefix("spi")) for n in masters if n.startswith("spi"))
        self.bus_number = numbers[0] if numbers else -1

    def sysfs_name(self, addr: int | None, node_name: str) -> str:
        assert addr is not None
        if self.bus_number < 0:
            raise RoadtestError(
                "the guest has no virtio SPI controller (no /sys/class/spi_master/spi*): its "
                "kernel needs the virtio-spi driver of kernel-patches/spi/ built in"
            )
        return f"spi{self.bus_number}.{addr}"

    def attach_spi(self, backend: Backend, addr: int, target: SPITarget) -> None:
        answering, observer = target
        backend.device(VirtioSpi).attach(addr, answering, observer)

    def detach(self, backend: Backend, addr: int) -> None:
        backend.device(VirtioSpi).detach(addr)
