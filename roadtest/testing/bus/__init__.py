"""The buses test devices sit on, as the test side sees them: one `TestBus` a bus.

A device declaration names its bus (`I2CDevice.bus == "i2c"`). What the session, the
devicetree builder, record, replay and hostile mode need of a bus is the small interface
below: the addresses a session hands out on it, where its devices' fragments go in the
devicetree, the sysfs bus its drivers bind on and its devices' names there, how the
session finds the guest's controller of it after boot, and, for a bus whose devices a
model answers for, how what answers (DeviceHooks' choice: the model, a trace player, a
hostile device) is put on the backend's bus and taken off. Adding a bus is one module
here (and one virtio device on the backend side, backend/registry.py), registered below.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, ClassVar

from roadtest.errors import RoadtestError

if TYPE_CHECKING:
    from roadtest.backend.i2c_transfer import BusTarget
    from roadtest.backend.server import Backend
    from roadtest.backend.spi_transfer import SPITarget
    from roadtest.guest.client import AgentClient
    from roadtest.testing.devicetree import Parent


class TestBus(ABC):
    """One bus of one session (an instance keeps what it found in the session's guest)."""

    __test__ = False  # not a test class, for pytest's collection

    name: ClassVar[str]  # what declarations name it by
    sysfs: ClassVar[str]  # /sys/bus/<sysfs>/: drivers_probe, devices/<name>
    dt_parent: ClassVar[Parent]  # where its devices' fragments go in the devicetree
    # The addresses a session hands out on it (reserved ones left out); None: a device is
    # placed by its node name alone (and has no model behind it).
    addresses: ClassVar[range | None] = None
    # The virtio device id of the backend's controller its devices sit on (None: none), so
    # that a machine that cannot carry that device leaves them out (MachineType.cannot_carry).
    virtio_device_id: ClassVar[int | None] = None

    def discover(self, agent: AgentClient) -> None:  # noqa: B027 (most buses have nothing to find)
        """After a guest booted: find its controller of this bus (RoadtestError if none)."""

    @abstractmethod
    def sysfs_name(self, addr: int | None, node_name: str) -> str:
        """A device's name under /sys/bus/<sysfs>/devices, from its address (or node name)."""

    def attach(self, backend: Backend, addr: int, target: BusTarget) -> None:
        """Put what answers for the device at `addr` on the backend's bus."""
        raise RoadtestError(f"no model answers on the {self.name} bus")

    def attach_spi(self, backend: Backend, addr: int, target: SPITarget) -> None:
        """Put what answers for an SPI device on chip select `addr` of the backend's bus."""
        raise RoadtestError(f"no SPI device answers on the {self.name} bus")

    def detach(self, backend: Backend, addr: int) -> None:  # noqa: B027 (nothing was put on)
        """Take it off."""


_BUSES: dict[str, type[TestBus]] = {}


def register(bus: type[TestBus]) -> None:
    _BUSES[bus.name] = bus


def unregister(name: str) -> None:
    _BUSES.pop(name, None)


def get(name: str) -> type[TestBus]:
    try:
        return _BUSES[name]
    except KeyError:
        raise RoadtestError(
            f"unknown bus {name!r}: roadtest has {', '.join(sorted(_BUSES))}"
        ) from None


def session_buses() -> dict[str, TestBus]:
    """A session's own instance of every bus."""
    return {name: bus() for name, bus in _BUSES.items()}


def _register_ours() -> None:
    from roadtest.testing.bus.i2c import I2CTestBus
    from roadtest.testing.bus.platform import PlatformBus
    from roadtest.testing.bus.spi import SPITestBus

    register(I2CTestBus)
    register(PlatformBus)
    register(SPITestBus)


_register_ours()
