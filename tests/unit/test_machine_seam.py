"""Machines as plug-ins: a machine registered through machine/registry.py runs sessions and
pytest runs with no change to the session, the backend or the plugin. The machine here is
a test-only dummy (dummy_machine.py) that boots nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from dummy_machine import DummyMachine, dummy_kernel, fake_include_root

from roadtest.backend.i2c_model import ModelHandler
from roadtest.machine import registry
from roadtest.models.base import SimpleSMBusModel
from roadtest.testing.devices import I2CDevice
from roadtest.testing.session import BoundDevice, RoadtestSession

HERE = Path(__file__).parent

SENSOR = I2CDevice(
    compatible="acme,sensor",
    model=lambda: SimpleSMBusModel(regs={0: 0x12}),
    dts='sensor@$addr$ { compatible = "acme,sensor"; reg = <0x$addr$>; };',
    origin="test_machine_seam.SENSOR",
)


@pytest.fixture
def dummy(tmp_path: Path) -> Iterator[DummyMachine]:
    machine = DummyMachine(dummy_kernel(tmp_path, fake_include_root(tmp_path / "ksrc")))
    registry.register(machine)
    try:
        yield machine
    finally:
        registry.unregister(machine.name)


def test_a_registered_machine_boots_the_sessions_guest(dummy: DummyMachine, tmp_path: Path) -> None:
    machine = registry.get("dummy")
    session = RoadtestSession(
        machine.build(tmp_path), [SENSOR], tmp_path / "run", cpu=None, machine=machine
    )
    session.start()
    try:
        (guest,) = dummy.booted
        assert session.machine is guest and guest.alive
        assert guest.config.image == dummy.kernel.image and guest.config.dtb == session.dtb
        dts = (tmp_path / "run" / "guest.dts").read_text()
        # The machine's transport around the backend's devices, then the tests' fragments.
        assert 'compatible = "roadtest,dummy"' in dts
        assert f'socket = "{session.backend.i2c_socket}"' in dts
        assert 'compatible = "virtio,device22"' in dts and "sensor@" in dts
        dev = session.attach(SENSOR)
        assert isinstance(dev, BoundDevice)
        assert dev.name == f"0-{dev.addr:04x}"  # the adapter the dummy guest lists: i2c-0
        handler = session.backend.i2c.bus.detach(dev.addr)  # what answers at its address
        assert isinstance(handler, ModelHandler) and handler.model is dev.model
    finally:
        session.stop()
    assert not guest.alive and guest.requests[-1]["op"] == "poweroff"


def test_an_unknown_machine_is_one_clear_error() -> None:
    with pytest.raises(Exception, match=r"unknown machine 'pdp11': roadtest has .*um"):
        registry.get("pdp11")


CONFTEST = f"""
import sys
from pathlib import Path

sys.path.insert(0, {str(HERE)!r})
from dummy_machine import DummyMachine, dummy_kernel, fake_include_root

from roadtest.machine import registry


def pytest_configure(config):
    root = Path(config.rootpath) / "kernel"
    root.mkdir(exist_ok=True)
    registry.register(DummyMachine(dummy_kernel(root, fake_include_root(root / "ksrc"))))
"""

USER_TESTS = """
from roadtest.models.base import SimpleSMBusModel
from roadtest.testing import I2CDevice

SENSOR = I2CDevice(
    compatible="acme,sensor",
    model=lambda: SimpleSMBusModel(regs={0: 0x12}),
    dts='sensor@$addr$ { compatible = "acme,sensor"; reg = <0x$addr$>; };',
)


def test_on_the_dummy(guest):
    assert guest.machine.name == "dummy"
    dev = guest.attach(SENSOR)
    handler = guest.backend.i2c.bus.detach(dev.addr)
    assert handler.model is dev.model
    guest.backend.i2c.bus.attach(dev.addr, handler)
"""


def pytest_on_the_dummy(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """pytest in `tmp_path` (its conftest registers the dummy machine) on that machine."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--roadtest-machine", "dummy"]
        + ["--roadtest-workdir", str(tmp_path / "w"), *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "ROADTEST_CACHE": str(tmp_path / "cache")},
        timeout=120,
        check=False,
    )


def test_pytest_runs_tests_on_a_registered_machine(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_user.py").write_text(USER_TESTS)
    run = pytest_on_the_dummy(tmp_path, "test_user.py")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout


MANY_DEVICES = """
from roadtest.models.base import SimpleSMBusModel
from roadtest.testing import I2CDevice

for _i in range(60):  # two such modules need more addresses than one adapter has (112)
    globals()[f"DEV{_i}"] = I2CDevice(
        compatible="acme,sensor",
        model=lambda: SimpleSMBusModel(regs={0: 0}),
        dts='s{}@$addr$ {{ compatible = "acme,sensor"; reg = <0x$addr$>; }};'.format(_i),
    )


def test_uses_the_last_device(guest):
    dev = guest.attach(DEV59)
    handler = guest.backend.i2c.bus.detach(dev.addr)
    assert handler.model is dev.model
    guest.backend.i2c.bus.attach(dev.addr, handler)
    print("boots:", guest.boots)
"""


def test_pytest_boots_a_tree_per_module_when_one_does_not_fit(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_first.py").write_text(MANY_DEVICES)
    (tmp_path / "test_second.py").write_text(MANY_DEVICES)
    run = pytest_on_the_dummy(tmp_path, "-s", "test_first.py", "test_second.py")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 passed" in run.stdout
    # The second module's devices are in a second tree, booted before its test.
    assert [line for line in run.stdout.splitlines() if "boots:" in line] == [
        "test_first.py boots: 1",
        "test_second.py boots: 2",
    ]
