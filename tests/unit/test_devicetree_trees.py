"""Devicetrees per test: more devices than one I2C adapter has addresses, clashing declarations,
and variants a test declares, each get a guest whose tree has them (on the dummy machine)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
from dummy_machine import DummyMachine, dummy_kernel, fake_include_root

from roadtest.backend.i2c_model import ModelHandler
from roadtest.models.base import SimpleSMBusModel
from roadtest.testing.devices import I2CDevice, PlacementError, PlatformDevice
from roadtest.testing.session import RoadtestSession

# The I2C specification reserves 0x00-0x07 and 0x78-0x7f: 112 addresses are left.
I2C_ADDRESSES_PER_ADAPTER = 0x78 - 0x08


def sensor(name: str) -> I2CDevice[SimpleSMBusModel]:
    return I2CDevice(
        compatible="acme,sensor",
        model=lambda: SimpleSMBusModel(regs={0: 0}),
        dts=f'{name}@$addr$ {{ compatible = "acme,sensor"; reg = <0x$addr$>; }};',
        origin=name,
    )


def group(module: str, count: int) -> list[I2CDevice[SimpleSMBusModel]]:
    return [sensor(f"{module}-s{i}") for i in range(count)]


@pytest.fixture
def machine(tmp_path: Path) -> DummyMachine:
    return DummyMachine(dummy_kernel(tmp_path, fake_include_root(tmp_path / "ksrc")))


MakeSession = Callable[..., RoadtestSession]


@pytest.fixture
def make_session(machine: DummyMachine, tmp_path: Path) -> Iterator[MakeSession]:
    """Started sessions on the dummy machine, with one device group per argument."""
    sessions: list[RoadtestSession] = []

    def make(*groups: Sequence[I2CDevice[SimpleSMBusModel] | PlatformDevice]) -> RoadtestSession:
        session = RoadtestSession(
            machine.kernel, [], tmp_path / "run", cpu=None, groups=groups, machine=machine
        )
        sessions.append(session)
        session.start()
        return session

    yield make
    for session in sessions:
        session.stop()


def dts_of(session: RoadtestSession) -> str:
    assert session.dtb is not None
    return session.dtb.with_suffix(".dts").read_text()


def test_more_devices_than_one_adapter_has_addresses(
    make_session: MakeSession, machine: DummyMachine
) -> None:
    a, b, c = group("a", 50), group("b", 50), group("c", 50)
    assert len(a + b + c) > I2C_ADDRESSES_PER_ADAPTER
    session = make_session(a, b, c)
    # The common case stays one boot: a and b share the first tree.
    assert len(machine.booted) == 1
    assert "a-s0@" in dts_of(session) and "b-s49@" in dts_of(session)
    assert "c-s0@" not in dts_of(session)

    dev = session.attach(c[7])  # c's tree: a second guest, booted for it
    assert len(machine.booted) == 2 and not machine.booted[0].alive
    assert f"c-s7@{dev.addr:x}" in dts_of(session)
    handler = session.backend.i2c.bus.detach(dev.addr)  # what answers at its address
    assert isinstance(handler, ModelHandler) and handler.model is dev.model
    session.detach_all()

    session.require(*b)  # back to the first tree
    assert len(machine.booted) == 3 and "b-s0@" in dts_of(session)


def test_clashing_platform_nodes_of_two_modules_get_two_trees(
    make_session: MakeSession, machine: DummyMachine
) -> None:
    first = PlatformDevice(
        "acme,consumer", 'consumer { compatible = "acme,consumer"; which = "1"; };'
    )
    second = dataclasses.replace(first, dts=first.dts.replace('"1"', '"2"'))
    session = make_session([first], [second])
    assert 'which = "1"' in dts_of(session) and 'which = "2"' not in dts_of(session)
    session.attach(second)
    assert 'which = "2"' in dts_of(session) and 'which = "1"' not in dts_of(session)
    assert len(machine.booted) == 2


def test_a_variant_declared_in_a_test_gets_a_tree_with_the_others(
    make_session: MakeSession, machine: DummyMachine
) -> None:
    base = sensor("lux")
    session = make_session([base])
    variant = dataclasses.replace(base, dts=base.dts.replace("reg =", 'label = "variant"; reg ='))
    dev = session.attach(variant)
    assert len(machine.booted) == 2
    assert 'label = "variant"' in dts_of(session)
    session.detach(dev)
    session.attach(base)  # the new tree kept the module's devices: no third boot
    assert len(machine.booted) == 2


def test_a_device_missing_from_the_tree_while_others_are_attached_says_what_to_do(
    make_session: MakeSession,
) -> None:
    base = sensor("lux")
    session = make_session([base])
    session.attach(base)
    with pytest.raises(
        PlacementError, match=r"call guest.require\(\) with all of the test's devices"
    ):
        session.attach(sensor("other"))
    session.detach_all()
    other = sensor("other")
    session.require(base, other)
    session.attach(base)
    session.attach(other)
