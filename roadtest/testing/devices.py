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
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Generic, TypeVar

from roadtest.errors import RoadtestError
from roadtest.models.base import ChipModel
from roadtest.testing import bus
from roadtest.testing.devicetree import NGPIO, Placed, fill


class PlacementError(RoadtestError):
    pass


# The model class a declaration makes. Covariant: a declaration only makes models (its
# `model` is a factory), so an I2CDevice[OPT3001] is an I2CDevice[I2CModel].
M_co = TypeVar("M_co", bound=ChipModel, covariant=True)


@dataclass(eq=False)
class ModelDevice(Generic[M_co]):
    """A device on a bus where a model answers for it (`bus` names it: testing/bus/): its
    devicetree node (with placeholders) and its model. Declare one of its kinds (I2CDevice).

    `model` is the model's class (or any factory): its type flows through
    `guest.bound()` and `guest.attach()` to `dev.model`, so a test of an
    `I2CDevice(model=OPT3001, ...)` gets an `OPT3001` there.
    `gpios` names the GPIO lines the node uses (`$name$` in `dts`); map a name
    to a number to ask for a fixed line, or list it to have one assigned.
    `addr` asks for a fixed address on its bus instead of an assigned one.
    """

    bus: ClassVar[str]
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


@dataclass(eq=False)
class I2CDevice(ModelDevice[M_co]):
    """An I2C device: its devicetree node (with placeholders) and the model that answers for
    it, at an I2C address the session assigns (or `addr`)."""

    bus: ClassVar[str] = "i2c"


@dataclass(eq=False)
class SPIDevice(ModelDevice[M_co]):
    """An SPI device: its devicetree node (with placeholders: `$addr$` is its chip select,
    for `reg = <$addr$>` and the node's unit address) and the model that answers for it,
    on a chip select the session assigns (or `addr`). The node says how the driver talks
    to it, as on a board: `spi-max-frequency`, and the mode (`spi-cpha`, `spi-cpol`,
    `spi-cs-high`, `spi-lsb-first`)."""

    bus: ClassVar[str] = "spi"


# The first node of a fragment: an optional label, then the node name.
_NODE_NAME = re.compile(r"^\s*(?:[A-Za-z_][\w]*\s*:\s*)?([A-Za-z0-9,._+-]+)\s*\{", re.MULTILINE)
# The label of a fragment's first node ("vref: regulator-vref {").
_NODE_LABEL = re.compile(r"^\s*([A-Za-z_]\w*)\s*:\s*[A-Za-z0-9,._+-]+\s*\{")


@dataclass(eq=False)
class PlatformDevice:
    """A devicetree node at the root, bound to its platform driver by the test.

    `dts` is one node (with `$name$` GPIO placeholders, as for I2C devices); the
    node name is the platform device's name in /sys/bus/platform/devices.
    """

    bus: ClassVar[str] = "platform"
    compatible: str
    dts: str
    gpios: Iterable[str] | Mapping[str, int | None] = ()
    origin: str = field(default="", compare=False)

    def gpio_requests(self) -> dict[str, int | None]:
        return _gpio_requests(self.gpios)

    @property
    def node_name(self) -> str:
        return node_name(self)


def fixed_regulator(label: str, microvolts: int) -> PlatformDevice:
    """A fixed regulator (regulator-fixed, always on at `microvolts`) that a device's node
    names as its supply: `vdd-supply = <&label>;`. Its node is regulator-<label>, its
    regulator-name <label>, both with dashes for underscores."""
    name = label.replace("_", "-")
    return PlatformDevice(
        compatible="regulator-fixed",
        dts=f"""
            {label}: regulator-{name} {{
                compatible = "regulator-fixed";
                regulator-name = "{name}";
                regulator-min-microvolt = <{microvolts}>;
                regulator-max-microvolt = <{microvolts}>;
            }};
        """,
    )


Device = ModelDevice[ChipModel] | PlatformDevice


def declared_devices(module: types.ModuleType) -> list[Device]:
    """The devices a test module declares at module level, in order, each knowing its origin."""
    found: list[Device] = []
    for name, value in vars(module).items():
        if isinstance(value, (ModelDevice, PlatformDevice)):
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


def _addresses(device: Device) -> range | None:
    """The addresses a session hands out on the device's bus (None: it has none)."""
    return bus.get(device.bus).addresses


def _bus_title(device: Device) -> str:
    return device.bus.upper() if len(device.bus) <= 4 else device.bus


def node_name(device: Device) -> str:
    """The name of the device's node (the first in its fragment)."""
    match = _NODE_NAME.search(device.dts)
    if match is None:
        raise PlacementError(f"{device.origin}: devicetree fragment has no node")
    return match.group(1)


def suppliers(device: Device, declared: Iterable[Device]) -> list[PlatformDevice]:
    """The platform devices of `declared` whose node `device`'s node refers to by label
    (`vref-supply = <&vref>`): a regulator, a clock, what its probe needs bound first, or it
    defers. In declaration order."""
    found: list[PlatformDevice] = []
    for other in declared:
        if other is device or not isinstance(other, PlatformDevice):
            continue
        label = _NODE_LABEL.match(other.dts)
        if label is not None and re.search(rf"&{label.group(1)}\b", device.dts):
            found.append(other)
    return found


def _module(device: Device) -> str:
    """The test module that declares `device` ("test_opt3001" of "test_opt3001.SENSOR")."""
    return device.origin.rpartition(".")[0]


class Layout:
    """Addresses and GPIO lines of one guest's devices: fixed requests first, then the rest,
    derived from their names (see the module's docstring). Addresses are per bus
    (testing/bus/); a device on a bus without addresses is placed by its node name."""

    def __init__(self, devices: Sequence[Device]) -> None:
        self.devices = list(devices)
        self.placements: dict[int, Placement] = {}
        addr_owner: dict[str, dict[int, Device]] = {}  # by bus, then address
        gpio_owner: dict[int, Device] = {}
        name_owner: dict[str, Device] = {}  # the node names of devices that have no address

        def taken(what: str, device: Device, other: Device) -> PlacementError:
            return PlacementError(
                f"{what} asked for by {device.origin} ({device.compatible}) is taken by "
                f"{other.origin} ({other.compatible}): pick another or let the session assign one"
            )

        for device in devices:
            addresses = _addresses(device)
            if addresses is None:
                name = node_name(device)
                if name in name_owner:
                    raise taken(f"{device.bus} node name {name!r}", device, name_owner[name])
                name_owner[name] = device
                continue
            assert isinstance(device, ModelDevice)
            owners = addr_owner.setdefault(device.bus, {})
            if device.addr is not None:
                what = f"{_bus_title(device)} address {device.addr:#04x}"
                if device.addr not in addresses:
                    raise PlacementError(
                        f"{device.origin}: {what} is outside "
                        f"{addresses.start:#04x}-{addresses.stop - 1:#04x}"
                    )
                if device.addr in owners:
                    raise taken(what, device, owners[device.addr])
                owners[device.addr] = device
        for device in devices:
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
        module_addrs: dict[tuple[str, str], set[int]] = {}  # by bus and module
        module_lines: dict[str, set[int]] = {}
        for bus_name, owners in addr_owner.items():
            for fixed_addr, owner in owners.items():
                module_addrs.setdefault((bus_name, _module(owner)), set()).add(fixed_addr)
        for fixed_line, owner in gpio_owner.items():
            module_lines.setdefault(_module(owner), set()).add(fixed_line)

        def derive(
            device: Device,
            what: str,
            key: str,
            choices: range,
            owner: dict[int, Device],
            mine: set[int],
            shown: Callable[[int], str] = str,
        ) -> int:
            slot = _derived(key, choices, mine)
            if slot is None:
                raise PlacementError(
                    f"{device.origin}: no free {what} is left for {device.compatible}"
                )
            if slot in owner:
                other = owner[slot]
                raise PlacementError(
                    f"{what} {shown(slot)} of {device.origin} ({device.compatible}) is taken by "
                    f"{other.origin} ({other.compatible}): their modules need separate guests"
                )
            owner[slot] = device
            mine.add(slot)
            return slot

        for device in devices:
            addr: int | None = None
            addresses = _addresses(device)
            if addresses is not None:
                assert isinstance(device, ModelDevice)
                addr = device.addr
                if addr is None:
                    addr = derive(
                        device,
                        f"{_bus_title(device)} address",
                        device.origin,
                        addresses,
                        addr_owner.setdefault(device.bus, {}),
                        module_addrs.setdefault((device.bus, _module(device)), set()),
                        lambda slot: f"{slot:#04x}",
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
                    module_lines.setdefault(_module(device), set()),
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

    def fragments(self, leave_out: Container[str] = ()) -> list[Placed]:
        """The devices' fragments, placed; but none of those on the buses `leave_out`
        names (a bus whose controller the machine cannot carry)."""
        result = []
        for device in self.devices:
            if device.bus in leave_out:
                continue
            place = self.placement(device)
            parent = bus.get(device.bus).dt_parent
            result.append(fill(device.origin, device.dts, place.addr, place.gpios, parent))
        return result
