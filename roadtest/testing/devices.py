"""Devices that test modules declare, and where a session places them.

A test module declares its devices at module level:

    SENSOR = I2CDevice(
        compatible="ti,opt3001",
        model=OPT3001,
        dts='''
            light-sensor@$addr$ {
                compatible = "ti,opt3001";
                reg = <0x$addr$>;
            };
        ''',
    )

A `PlatformDevice` is a node at the tree's root with no model behind it, such
as a regulator's virtual consumer; the kernel names its platform device after
the node.

The session collects every declaration of the tests it runs, gives each I2C
device an address (and every device the GPIO lines it names) and builds one
devicetree from them before the guest boots.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from roadtest.errors import RoadtestError
from roadtest.models.base import I2CModel
from roadtest.testing.devicetree import I2C_ADDRESSES, NGPIO, Parent, Placed, fill


class PlacementError(RoadtestError):
    pass


# The model class a declaration makes. Covariant: a declaration only makes models (its
# `model` is a factory), so an I2CDevice[OPT3001] is an I2CDevice[I2CModel].
M_co = TypeVar("M_co", bound=I2CModel, covariant=True)


@dataclass(eq=False)
class I2CDevice(Generic[M_co]):
    """An I2C device: its devicetree node (with placeholders) and the model that answers for it.

    `model` is the model's class (or any factory): its type flows through
    `guest.bound()` and `guest.attach()` to `dev.model`, so a test of an
    `I2CDevice(model=OPT3001, ...)` gets an `OPT3001` there.
    `gpios` names the GPIO lines the node uses (`$name$` in `dts`); map a name
    to a number to ask for a fixed line, or list it to have one assigned.
    `addr` asks for a fixed I2C address instead of an assigned one.
    """

    compatible: str
    model: Callable[[], M_co]
    dts: str
    gpios: Iterable[str] | Mapping[str, int | None] = ()
    addr: int | None = None
    origin: str = field(default="", compare=False)

    def gpio_requests(self) -> dict[str, int | None]:
        if isinstance(self.gpios, Mapping):
            return dict(self.gpios)
        return _gpio_requests(self.gpios)


def _gpio_requests(gpios: Iterable[str] | Mapping[str, int | None]) -> dict[str, int | None]:
    if isinstance(gpios, Mapping):
        return dict(gpios)
    return {name: None for name in gpios}


# The first node of a fragment: an optional label, then the node name.
_NODE_NAME = re.compile(r"^\s*(?:[A-Za-z_][\w]*\s*:\s*)?([A-Za-z0-9,._+-]+)\s*\{", re.MULTILINE)


@dataclass(eq=False)
class PlatformDevice:
    """A devicetree node at the root, bound to its platform driver by the test.

    `dts` is one node (with `$name$` GPIO placeholders, as for I2C devices); the
    node name is the platform device's name in /sys/bus/platform/devices.
    """

    compatible: str
    dts: str
    gpios: Iterable[str] | Mapping[str, int | None] = ()
    origin: str = field(default="", compare=False)

    def gpio_requests(self) -> dict[str, int | None]:
        return _gpio_requests(self.gpios)

    @property
    def node_name(self) -> str:
        match = _NODE_NAME.search(self.dts)
        if match is None:
            raise PlacementError(f"{self.origin}: devicetree fragment has no node")
        return match.group(1)


Device = I2CDevice[I2CModel] | PlatformDevice


@dataclass(frozen=True)
class Placement:
    addr: int | None  # None for a platform device
    gpios: dict[str, int]


class Layout:
    """Addresses and GPIO lines of one guest's devices: fixed requests first, then the rest."""

    def __init__(self, devices: Sequence[Device]) -> None:
        self.devices = list(devices)
        self.placements: dict[int, Placement] = {}
        addr_owner: dict[int, Device] = {}
        gpio_owner: dict[int, Device] = {}
        platform_owner: dict[str, Device] = {}

        def taken(what: str, device: Device, other: Device) -> PlacementError:
            return PlacementError(
                f"{what} asked for by {device.origin} ({device.compatible}) is taken by "
                f"{other.origin} ({other.compatible}): pick another or let the session assign one"
            )

        for device in devices:
            if isinstance(device, PlatformDevice):
                name = device.node_name
                if name in platform_owner:
                    raise taken(f"platform node name {name!r}", device, platform_owner[name])
                platform_owner[name] = device
            elif device.addr is not None:
                if device.addr not in I2C_ADDRESSES:
                    raise PlacementError(
                        f"{device.origin}: I2C address {device.addr:#04x} is outside "
                        f"{I2C_ADDRESSES.start:#04x}-{I2C_ADDRESSES.stop - 1:#04x}"
                    )
                if device.addr in addr_owner:
                    raise taken(f"I2C address {device.addr:#04x}", device, addr_owner[device.addr])
                addr_owner[device.addr] = device
            for name, line in device.gpio_requests().items():
                if line is None:
                    continue
                if not 0 <= line < NGPIO:
                    raise PlacementError(
                        f"{device.origin}: GPIO line {line} ({name}) is not in 0-{NGPIO - 1}"
                    )
                if line in gpio_owner:
                    raise taken(f"GPIO line {line} ({name})", device, gpio_owner[line])
                gpio_owner[line] = device

        free_addrs = (a for a in I2C_ADDRESSES if a not in addr_owner)
        free_lines = (n for n in range(NGPIO) if n not in gpio_owner)
        for device in devices:
            try:
                addr: int | None
                if isinstance(device, PlatformDevice):
                    addr = None
                else:
                    addr = device.addr if device.addr is not None else next(free_addrs)
                gpios = {
                    name: line if line is not None else next(free_lines)
                    for name, line in device.gpio_requests().items()
                }
            except StopIteration:
                raise PlacementError(
                    f"{device.origin}: no free I2C address or GPIO line is left "
                    f"for {device.compatible}"
                ) from None
            self.placements[id(device)] = Placement(addr, gpios)

    def placement(self, device: Device) -> Placement:
        try:
            return self.placements[id(device)]
        except KeyError:
            raise PlacementError(
                f"{device.compatible} ({device.origin}) was not declared at module level of a "
                "collected test module, so the session's devicetree does not have it"
            ) from None

    def fragments(self) -> list[Placed]:
        result = []
        for device in self.devices:
            place = self.placement(device)
            parent: Parent = "root" if isinstance(device, PlatformDevice) else "i2c"
            result.append(fill(device.origin, device.dts, place.addr, place.gpios, parent))
        return result
