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

An assigned address or line is derived from the declaration's name (its
`origin`, e.g. "test_opt3001.SENSOR") alone, never from what else a run
collected, so that a golden trace records the same address whichever tests
were collected with it. Devices of one test module that the name would put on
the same address or line take the next free ones, in declaration order; two
modules whose devices still clash go into different devicetrees (a guest each).
"""

from __future__ import annotations

import re
import types
import zlib
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


def declared_devices(module: types.ModuleType) -> list[Device]:
    """The devices a test module declares at module level, in order, each knowing its origin."""
    found: list[Device] = []
    for name, value in vars(module).items():
        if isinstance(value, (I2CDevice, PlatformDevice)):
            if not value.origin:
                value.origin = f"{module.__name__}.{name}"
            found.append(value)
    return found


@dataclass(frozen=True)
class Placement:
    addr: int | None  # None for a platform device
    gpios: dict[str, int]


def _derived(key: str, choices: range, taken: set[int]) -> int | None:
    """The slot of `choices` that `key` names (a stable hash), or the first after it that is
    not in `taken`; None when all are taken."""
    start = zlib.crc32(key.encode()) % len(choices)
    for step in range(len(choices)):
        slot = choices[(start + step) % len(choices)]
        if slot not in taken:
            return slot
    return None


def _module(device: Device) -> str:
    """The test module that declares `device` ("test_opt3001" of "test_opt3001.SENSOR")."""
    return device.origin.rpartition(".")[0]


class Layout:
    """Addresses and GPIO lines of one guest's devices: fixed requests first, then the rest,
    derived from their names (see the module's docstring)."""

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

        # What each module's devices hold: a derived slot skips only these.
        module_addrs: dict[str, set[int]] = {}
        module_lines: dict[str, set[int]] = {}
        for fixed_addr, owner in addr_owner.items():
            module_addrs.setdefault(_module(owner), set()).add(fixed_addr)
        for fixed_line, owner in gpio_owner.items():
            module_lines.setdefault(_module(owner), set()).add(fixed_line)

        def derive(
            device: Device,
            what: str,
            key: str,
            choices: range,
            owner: dict[int, Device],
            held: dict[str, set[int]],
        ) -> int:
            mine = held.setdefault(_module(device), set())
            slot = _derived(key, choices, mine)
            if slot is None:
                raise PlacementError(
                    f"{device.origin}: no free {what} is left for {device.compatible}"
                )
            if slot in owner:
                other = owner[slot]
                shown = f"{slot:#04x}" if what.startswith("I2C") else str(slot)
                raise PlacementError(
                    f"{what} {shown} of {device.origin} ({device.compatible}) is taken by "
                    f"{other.origin} ({other.compatible}): their modules need separate guests"
                )
            owner[slot] = device
            mine.add(slot)
            return slot

        for device in devices:
            addr: int | None = None
            if not isinstance(device, PlatformDevice):
                addr = device.addr
                if addr is None:
                    addr = derive(
                        device,
                        "I2C address",
                        device.origin,
                        I2C_ADDRESSES,
                        addr_owner,
                        module_addrs,
                    )
            gpios = {
                name: line
                if line is not None
                else derive(
                    device,
                    f"GPIO line ({name})",
                    f"{device.origin}:{name}",
                    range(NGPIO),
                    gpio_owner,
                    module_lines,
                )
                for name, line in device.gpio_requests().items()
            }
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
