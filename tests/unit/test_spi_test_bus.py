"""SPI on the test side, without a guest: chip selects, the devicetree under the virtio SPI
controller, sysfs names, a session attaching an SPI model, and the x86_64 machine, whose
QEMU has no vhost-user SPI frontend, leaving SPI out with one clear reason."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from dummy_machine import LISTINGS, DummyMachine, dummy_kernel, fake_include_root
from helpers import make_ko

from roadtest.backend.server import Backend
from roadtest.backend.spi import VirtioSpi
from roadtest.machine.qemu import X86_64_QEMU
from roadtest.machine.uml import UML
from roadtest.models import SimpleSMBusModel, SPIModel
from roadtest.testing import I2CDevice, SPIDevice
from roadtest.testing import bus as buses
from roadtest.testing.devices import Layout
from roadtest.testing.devicetree import build
from roadtest.testing.modules import ModuleError, ModuleIndex
from roadtest.testing.session import RoadtestSession, virtio_nodes


class Thermo(SPIModel):
    def transfer(self, tx: bytes | None, length: int, mode: int, bits_per_word: int) -> bytes:
        return b"\x0c\x87"[:length]


def thermo(origin: str, addr: int | None = None) -> SPIDevice[Thermo]:
    return SPIDevice(
        compatible="ti,tmp121",
        model=Thermo,
        dts="""
            temp@$addr$ {
                compatible = "ti,tmp121";
                reg = <$addr$>;
                spi-max-frequency = <5000000>;
                spi-cpha;
            };
        """,
        addr=addr,
        origin=origin,
    )


SENSOR = I2CDevice(
    compatible="acme,sensor",
    model=lambda: SimpleSMBusModel(regs={0: 0x12}),
    dts='sensor@$addr$ { compatible = "acme,sensor"; reg = <0x$addr$>; };',
    origin="test_mixed.SENSOR",
)


def fdtget(dtb: Path, node: str, prop: str, kind: str = "s") -> str:
    return subprocess.run(
        ["fdtget", "-t", kind, str(dtb), node, prop], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_chip_selects_are_the_controllers() -> None:
    spi = buses.get("spi")
    # The default controller's cs_max_number chip selects, 0 upward: the session hands out
    # exactly those the guest's controller has.
    assert spi.addresses == range(VirtioSpi().cs_max_number)
    assert spi.sysfs == "spi" and spi.dt_parent == "spi"


def test_spi_devices_get_chip_selects_of_their_own() -> None:
    devices = [thermo(f"test_a.T{i}") for i in range(4)]
    layout = Layout(devices)
    chip_selects = [layout.placement(d).addr for d in devices]
    assert len(set(chip_selects)) == 4
    assert all(cs is not None and 0 <= cs < VirtioSpi().cs_max_number for cs in chip_selects)
    # Derived from the declaration's name alone: the same whatever else a run collected.
    alone, again = thermo("test_a.T0"), thermo("test_a.T0")
    assert Layout([alone]).placement(alone).addr == Layout([again, SENSOR]).placement(again).addr


def test_a_fixed_chip_select_outside_the_controller_is_refused() -> None:
    with pytest.raises(Exception, match="SPI address 0x08 is outside 0x00-0x07"):
        Layout([thermo("test_a.T", addr=8)])


def test_two_fixed_devices_on_one_chip_select_clash() -> None:
    with pytest.raises(Exception, match="SPI address 0x03 .* is taken by test_a.T1"):
        Layout([thermo("test_a.T1", addr=3), thermo("test_b.T2", addr=3)])


def test_spi_and_i2c_addresses_are_separate() -> None:
    spi = thermo("test_mixed.T", addr=0x10 % 8)
    layout = Layout([spi, SENSOR])
    assert layout.placement(spi).addr == 0  # 0x10 % 8


def test_the_fragment_is_a_child_of_the_virtio_spi_controller(tmp_path: Path) -> None:
    device = thermo("test_a.T", addr=5)
    root = UML.devicetree_root(virtio_nodes(Backend(Path("/w")), UML))
    dtb = build(Layout([device]).fragments(), fake_include_root(tmp_path / "k"), tmp_path, root)
    node = "/virtio@2/spi/temp@5"
    assert fdtget(dtb, node, "compatible") == "ti,tmp121"
    assert fdtget(dtb, node, "reg", "u") == "5"
    assert fdtget(dtb, node, "spi-max-frequency", "u") == "5000000"
    assert fdtget(dtb, "/virtio@2/spi", "compatible") == "virtio,device2d"


# The x86_64 machine: QEMU 10 has no vhost-user SPI frontend.


def test_uml_carries_every_device() -> None:
    for device_id in (34, 41, 45):
        assert UML.cannot_carry(device_id) is None
    assert [n.label for n in virtio_nodes(Backend(Path("/w")), UML)] == ["gpio", "i2c", "spi"]


def test_x86_64_leaves_the_spi_controller_out_and_says_why(tmp_path: Path) -> None:
    assert X86_64_QEMU.cannot_carry(34) is None and X86_64_QEMU.cannot_carry(41) is None
    why = X86_64_QEMU.cannot_carry(45)
    assert why is not None and "no vhost-user SPI frontend" in why
    assert "\n" not in why
    nodes = virtio_nodes(Backend(Path("/w")), X86_64_QEMU)
    assert [n.label for n in nodes] == ["gpio", "i2c"]
    # The tree still compiles with an SPI device declared: its fragment is left out.
    device = thermo("test_a.T", addr=1)
    layout = Layout([device, SENSOR])
    root = X86_64_QEMU.devicetree_root(nodes)
    fragments = layout.fragments(leave_out={"spi"})
    assert [f.origin for f in fragments] == ["test_mixed.SENSOR"]
    build(fragments, fake_include_root(tmp_path / "k"), tmp_path, root)


# A session on a machine without a kernel (dummy_machine)


class NoSpiMachine(DummyMachine):
    name = "dummy-nospi"

    def cannot_carry(self, device_id: int) -> str | None:
        return "this dummy has no SPI frontend" if device_id == 45 else None


@pytest.fixture
def spi_master() -> Iterator[None]:
    LISTINGS["/sys/class/spi_master"] = ["spi3"]
    try:
        yield
    finally:
        del LISTINGS["/sys/class/spi_master"]


@pytest.mark.usefixtures("spi_master")
def test_a_session_names_the_device_and_puts_its_model_on_its_chip_select(
    tmp_path: Path,
) -> None:
    machine = DummyMachine(dummy_kernel(tmp_path, fake_include_root(tmp_path / "ksrc")))
    device = thermo("test_a.T", addr=6)
    session = RoadtestSession(
        machine.build(tmp_path), [device], tmp_path / "run", cpu=None, machine=machine
    )
    session.start()
    try:
        dev = session.attach(device)
        assert dev.name == "spi3.6"  # the bus number the guest's spi_master has
        assert session.backend.device(VirtioSpi).bus.get(6) is dev.model
        assert session.cannot_carry([device]) is None
        session.detach(dev)
        assert session.backend.device(VirtioSpi).bus.get(6) is None
    finally:
        session.stop()


def test_without_a_controller_naming_a_device_says_so(tmp_path: Path) -> None:
    machine = DummyMachine(dummy_kernel(tmp_path, fake_include_root(tmp_path / "ksrc")))
    device = thermo("test_a.T", addr=6)
    session = RoadtestSession(
        machine.build(tmp_path), [device], tmp_path / "run", cpu=None, machine=machine
    )
    session.start()  # a guest without an SPI controller boots (6.12 without the driver)
    try:
        with pytest.raises(Exception, match="the guest has no virtio SPI controller"):
            session.attach(device)
    finally:
        session.stop()


def test_a_machine_that_cannot_carry_spi_skips_with_one_reason(tmp_path: Path) -> None:
    machine = NoSpiMachine(dummy_kernel(tmp_path, fake_include_root(tmp_path / "ksrc")))
    device = thermo("test_a.T", addr=2)
    session = RoadtestSession(
        machine.build(tmp_path), [device, SENSOR], tmp_path / "run", cpu=None, machine=machine
    )
    assert session.cannot_carry([SENSOR]) is None
    assert session.cannot_carry([device]) == (
        "unsupported on dummy-nospi: test_a.T is an SPI device, and this dummy has no SPI frontend"
    )
    session.start()
    try:
        dts = (tmp_path / "run" / "guest.dts").read_text()
        assert "temp@" not in dts and "sensor@" in dts
        assert 'compatible = "virtio,device2d"' not in dts
    finally:
        session.stop()


def test_a_driver_without_an_of_table_is_found_by_its_spi_device_id(tmp_path: Path) -> None:
    # The SPI core names a devicetree device after its compatible's part after the comma,
    # and announces MODALIAS=spi:<name> (drivers/spi/spi.c, of_register_spi_device).
    root = tmp_path / "lib/modules/6.12.0-roadtest"
    make_ko(root / "kernel/drivers/hwmon/lm70.ko", "alias=spi:tmp121", "depends=", "name=lm70")
    index = ModuleIndex(root)
    assert index.for_compatible("ti,tmp121", "spi").name == "lm70"
    with pytest.raises(ModuleError):
        index.for_compatible("ti,tmp121", "i2c")
