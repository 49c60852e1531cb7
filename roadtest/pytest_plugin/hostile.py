"""Hostile-device mode (`roadtest fuzz --hostile`): every I2C and SPI device a test file
declares, behind a hostile device (roadtest.fuzz.lying_device), bound, exercised and unbound.

No property is written for the driver. With `--roadtest-hostile` a test file's own
tests are not collected; in their place comes one Hypothesis test per device it
declares, `hostile[NAME]`. Each example draws a plan, binds the device behind it (a
probe that refuses the device is a right answer, not a failure), reads every readable
sysfs attribute of the device and of its IIO, RTC, regulator, hwmon and input
children, reads the RTC and input character devices where a read cannot block or
change anything, and unbinds. The property is the examples runner's: no kernel report,
no crash, no hang; and, on a kernel with kmemleak (the sanitizer kernel), no object left
behind: kmemleak is asked after each unbind (it costs a second or two per example).
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import pytest
from hypothesis import given

from roadtest.fuzz.lying_device import (
    HostileHandler,
    HostilePlan,
    HostileSPIHandler,
    plans,
    spi_plans,
)
from roadtest.guest.protocol import ProtocolError
from roadtest.models.base import ChipModel, I2CModel, SPIModel
from roadtest.models.regmap import RegisterMap
from roadtest.testing.devices import (
    I2CDevice,
    PlatformDevice,
    SPIDevice,
    declared_devices,
    suppliers,
)
from roadtest.testing.hooks import DeviceHooks, WrappingHooks
from roadtest.testing.kmemleak import KMEMLEAK
from roadtest.testing.session import BindError, BoundDevice, RoadtestSession

if TYPE_CHECKING:
    from roadtest.backend.gpio import GpioLine
    from roadtest.backend.i2c_transfer import BusTarget
    from roadtest.backend.spi_transfer import SPITarget
    from roadtest.trace.names import TracedDevice

# The children a device's drivers register, as globs under its sysfs directory.
CHILDREN = (
    "iio:device*",
    "rtc/rtc*",
    "hwmon/hwmon*",
    "regulator/regulator.*",
    "input/input*",
    "input/input*/event*",
)
# struct rtc_time is nine ints; _IOR('p', 0x09, struct rtc_time).
RTC_RD_TIME = 0x80247009
_RTC_TIME_SIZE = 36
_O_RDONLY_NONBLOCK = 0o4000


def attributes(guest: RoadtestSession, dev: BoundDevice[ChipModel]) -> list[str]:
    """The readable regular files of the device's sysfs directory and its children's, not
    following links (a link leads to the driver, the bus, a supplier: not this device's)."""
    dirs = [str(dev.path)] + [
        str(child) for pattern in CHILDREN for child in dev.path.glob(pattern)
    ]
    status, out, _ = guest.agent.run(
        ["/usr/bin/find", *dirs, "-maxdepth", "1", "-type", "f", "-perm", "-u=r"]
    )
    return out.decode(errors="replace").split() if status == 0 else []


def exercise(guest: RoadtestSession, dev: BoundDevice[ChipModel]) -> int:
    """Read what the device offers (errors are answers too); how many reads were made."""
    agent = guest.agent
    reads = 0
    for path in attributes(guest, dev):
        try:
            agent.read_file(path)
        except OSError:
            pass
        reads += 1
    for rtc in dev.path.glob("rtc/rtc*"):
        reads += _read_device(guest, f"/dev/{rtc.name}", RTC_RD_TIME, _RTC_TIME_SIZE)
    for event in dev.path.glob("input/input*/event*"):
        try:
            agent.read_file(f"/dev/input/{event.name}")  # non-blocking: EAGAIN when idle
        except OSError:
            pass
        reads += 1
    return reads


def _read_device(guest: RoadtestSession, node: str, request: int, size: int) -> int:
    agent = guest.agent
    try:
        fd = agent.open(node, _O_RDONLY_NONBLOCK)
    except OSError:
        return 0
    try:
        agent.ioctl(fd, request, bytes(size))
    except OSError:
        pass
    finally:
        agent.close(fd)
    return 1


class LeftBehind(AssertionError):
    """Unbinding the device left kernel objects that nothing points to (kmemleak)."""


def check_leaks(guest: RoadtestSession, device: str) -> None:
    """On a kernel with kmemleak (the sanitizer kernel): LeftBehind if an object became
    unreferenced during the example. Elsewhere nothing (the main kernel has no kmemleak)."""
    if not guest.agent.exists(KMEMLEAK):
        return
    leaks = guest.kmemleak_scan()
    if leaks:
        raise LeftBehind(
            f"binding, exercising and unbinding {device} left "
            f"{len(leaks)} unreferenced object(s); the first, as kmemleak reports it:\n" + leaks[0]
        )


def hostile_test(
    device: I2CDevice[I2CModel] | SPIDevice[SPIModel], needs: Sequence[PlatformDevice] = ()
) -> Callable[..., None]:
    """The Hypothesis test of `device` behind a hostile device, with the platform devices it
    `needs` (its suppliers: a vref regulator) bound around each example, as its tests do."""

    def test(guest: RoadtestSession, plan: HostilePlan) -> None:
        with contextlib.ExitStack() as stack:
            for supplier in needs:
                stack.enter_context(guest.bound(supplier))
            with guest.hooks_wrapped(lambda inner: HostileHooks(inner, plan)):
                _example(guest, device)
        check_leaks(guest, device.compatible)

    test.__name__ = test.__qualname__ = f"hostile_{device.origin.rpartition('.')[2]}"
    if isinstance(device, SPIDevice):
        return given(plan=spi_plans())(test)
    register_map = getattr(device.model, "register_map", None)
    return given(plan=plans(register_map if isinstance(register_map, RegisterMap) else None))(test)


def _example(guest: RoadtestSession, device: I2CDevice[I2CModel] | SPIDevice[SPIModel]) -> None:
    """Attach (behind the hostile device), bind, exercise, detach."""
    dev = guest.attach(device)
    try:
        try:
            dev.bind()
        except BindError:
            return  # the probe refused the device: a right answer
        exercise(guest, dev)
    finally:
        try:
            guest.detach(dev)
        except ProtocolError:
            pass  # the guest died: the examples runner says how


class HostileHooks(WrappingHooks):
    """DeviceHooks that answer every device attached through them with its model behind
    `plan`, keeping what the hooks they wrap observe (a recorder's observer) and decide."""

    def __init__(self, inner: DeviceHooks, plan: HostilePlan) -> None:
        super().__init__(inner)
        self.plan = plan

    def attached(
        self, test_id: str, device: TracedDevice, model: I2CModel, lines: Mapping[str, GpioLine]
    ) -> BusTarget:
        _, observer = self.inner.attached(test_id, device, model, lines)
        return HostileHandler(model, self.plan, lines.get("irq")), observer

    def attached_spi(
        self, test_id: str, device: TracedDevice, model: SPIModel, lines: Mapping[str, GpioLine]
    ) -> SPITarget:
        _, observer = self.inner.attached_spi(test_id, device, model, lines)
        return HostileSPIHandler(model, self.plan, lines.get("irq")), observer


class HostileModule(pytest.Module):
    """A test file, seen as the hostile tests of the I2C and SPI devices it declares."""

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        module = self.obj
        assert isinstance(module, types.ModuleType)
        declared = declared_devices(module)
        for device in declared:
            if isinstance(device, (I2CDevice, SPIDevice)):
                name = f"hostile[{device.origin.rpartition('.')[2]}]"
                test = hostile_test(device, suppliers(device, declared))
                yield pytest.Function.from_parent(self, name=name, callobj=test)


class HostileCollection:
    """The plugin `--roadtest-hostile` registers: test files collect as HostileModules."""

    def pytest_pycollect_makemodule(
        self, module_path: object, parent: pytest.Collector
    ) -> pytest.Module | None:
        from pathlib import Path

        assert isinstance(module_path, Path)
        return HostileModule.from_parent(parent, path=module_path)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if not session.items and not session.config.getoption("--collect-only"):
            args = " ".join(session.config.args)
            raise pytest.UsageError(
                f"no fuzzable device in {args}: hostile mode needs a test file that declares "
                "an I2CDevice or an SPIDevice"
            )
