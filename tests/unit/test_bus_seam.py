"""Buses as plug-ins on the test side: a bus registered through roadtest/testing/bus/ gets
its devices placed, put in the devicetree, named in sysfs and answered on the backend, with
no change to the session, the devicetree builder or the hooks. The bus here is a test-only
dummy (its "backend" is a dict), on the dummy machine (dummy_machine.py)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest
from dummy_machine import DummyMachine, dummy_kernel, fake_include_root

from roadtest.backend.gpio import GpioLine
from roadtest.backend.i2c_model import ModelHandler
from roadtest.backend.i2c_transfer import BusTarget
from roadtest.backend.server import Backend
from roadtest.models.base import I2CModel, SimpleSMBusModel
from roadtest.testing import bus
from roadtest.testing.bus import TestBus
from roadtest.testing.devices import Layout, ModelDevice, PlacementError
from roadtest.testing.devicetree import Parent
from roadtest.testing.hooks import LiveHooks
from roadtest.testing.session import BoundDevice, RoadtestSession
from roadtest.trace.names import TracedDevice


class DummyBus(TestBus):
    name: ClassVar[str] = "dummy"
    sysfs: ClassVar[str] = "dummybus"
    dt_parent: ClassVar[Parent] = "root"
    addresses: ClassVar[range | None] = range(1, 4)  # three chip selects

    def __init__(self) -> None:
        self.controller = ""
        self.answering: dict[int, BusTarget] = {}

    def discover(self, agent: Any) -> None:
        self.controller = "dummy0"

    def sysfs_name(self, addr: int | None, node_name: str) -> str:
        return f"{self.controller}.{addr}"

    def attach(self, backend: Backend, addr: int, target: BusTarget) -> None:
        self.answering[addr] = target

    def detach(self, backend: Backend, addr: int) -> None:
        del self.answering[addr]


@dataclass(eq=False)
class DummyDevice(ModelDevice[SimpleSMBusModel]):
    bus: ClassVar[str] = "dummy"


def sensor(origin: str, addr: int | None = None) -> DummyDevice:
    return DummyDevice(
        compatible="acme,dummy-sensor",
        model=lambda: SimpleSMBusModel(regs={0: 0x12}),
        dts='sensor@$addr$ { compatible = "acme,dummy-sensor"; reg = <$addr$>; };',
        addr=addr,
        origin=origin,
    )


class Hooks(LiveHooks):
    def __init__(self) -> None:
        self.seen: list[TracedDevice] = []
        self.gone: list[TracedDevice] = []

    def attached(
        self, test_id: str, device: TracedDevice, model: I2CModel, lines: Mapping[str, GpioLine]
    ) -> BusTarget:
        self.seen.append(device)
        return super().attached(test_id, device, model, lines)

    def detached(self, device: TracedDevice) -> list[Exception]:
        self.gone.append(device)
        return []


@pytest.fixture
def dummy_bus() -> Iterator[None]:
    bus.register(DummyBus)
    try:
        yield
    finally:
        bus.unregister(DummyBus.name)


def test_a_device_on_a_registered_bus_is_placed_named_and_answered(
    dummy_bus: None, tmp_path: Path
) -> None:
    device = sensor("test_bus_seam.SENSOR")
    machine = DummyMachine(dummy_kernel(tmp_path, fake_include_root(tmp_path / "ksrc")))
    hooks = Hooks()
    session = RoadtestSession(
        machine.build(tmp_path), [device], tmp_path / "run", cpu=None, machine=machine, hooks=hooks
    )
    session.start()
    try:
        dts = (tmp_path / "run" / "guest.dts").read_text()
        assert 'compatible = "acme,dummy-sensor"' in dts
        dev = session.attach(device)
        assert isinstance(dev, BoundDevice) and dev.addr in range(1, 4)
        assert f"sensor@{dev.addr}" in dts  # the fragment, with its address filled in
        bus_of_session = session.buses["dummy"]
        assert isinstance(bus_of_session, DummyBus)
        # Named as the bus names it, under the bus's sysfs directory.
        assert dev.name == f"dummy0.{dev.addr}" and dev.bus == "dummybus"
        assert str(dev.path) == f"/sys/bus/dummybus/devices/dummy0.{dev.addr}"
        # What answers there is the hooks' choice (the live model), on the bus's backend.
        handler, _ = bus_of_session.answering[dev.addr]
        assert isinstance(handler, ModelHandler) and handler.model is dev.model
        assert hooks.seen == [
            TracedDevice("acme,dummy-sensor", dev.addr, device.origin, (), bus="dummy")
        ]
        session.detach(dev)
        assert bus_of_session.answering == {} and hooks.gone == hooks.seen
    finally:
        session.stop()


def test_addresses_are_the_buses_own(dummy_bus: None) -> None:
    with pytest.raises(PlacementError, match="dummy address 0x09 is outside 0x01-0x03"):
        Layout([sensor("test_m.A", addr=9)])
    three = [sensor(f"test_m.S{i}") for i in range(3)]
    layout = Layout(three)
    assert sorted(layout.placement(d).addr or 0 for d in three) == [1, 2, 3]
    with pytest.raises(PlacementError, match="no free dummy address"):
        Layout([*three, sensor("test_m.S3")])


def test_an_unknown_bus_is_one_line() -> None:
    with pytest.raises(Exception, match="unknown bus 'spmi': roadtest has i2c, platform, spi"):
        bus.get("spmi")
