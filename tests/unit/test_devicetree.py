"""Devicetree assembly, placeholder assignment and compilation with dtc."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

from roadtest.backend.server import Backend
from roadtest.machine.uml import UML
from roadtest.models.base import SimpleSMBusModel
from roadtest.testing.devices import (
    Device,
    I2CDevice,
    Layout,
    PlacementError,
    PlatformDevice,
    suppliers,
)
from roadtest.testing.devicetree import DevicetreeError, build, fill
from roadtest.testing.session import virtio_nodes

NODE = """
    sensor@$addr$ {
        compatible = "acme,sensor";
        reg = <0x$addr$>;
    };
"""
IRQ_NODE = """
    chip@$addr$ {
        compatible = "acme,chip";
        reg = <0x$addr$>;
        interrupt-parent = <&gpio>;
        interrupts = <$irq$ IRQ_TYPE_EDGE_FALLING>;
        reset-gpios = <&gpio $reset$ GPIO_ACTIVE_LOW>;
    };
"""


def model() -> SimpleSMBusModel:
    return SimpleSMBusModel(regs={0: 0})


def device(
    dts: str = NODE,
    origin: str = "t.DEV",
    gpios: Iterable[str] | Mapping[str, int | None] = (),
    addr: int | None = None,
) -> I2CDevice[SimpleSMBusModel]:
    return I2CDevice(
        compatible="acme,sensor", model=model, dts=dts, origin=origin, gpios=gpios, addr=addr
    )


@pytest.fixture
def include_root(tmp_path: Path) -> Path:
    """A stand-in for the kernel tree's dt-bindings headers."""
    root = tmp_path / "ksrc"
    bindings = root / "scripts/dtc/include-prefixes/dt-bindings"
    (bindings / "gpio").mkdir(parents=True)
    (bindings / "interrupt-controller").mkdir(parents=True)
    (bindings / "gpio/gpio.h").write_text("#define GPIO_ACTIVE_HIGH 0\n#define GPIO_ACTIVE_LOW 1\n")
    (bindings / "interrupt-controller/irq.h").write_text(
        "#define IRQ_TYPE_EDGE_RISING 1\n#define IRQ_TYPE_EDGE_FALLING 2\n"
    )
    return root


def uml_root(workdir: str = "/w") -> str:
    """The UML machine's root node for a backend whose sockets are in `workdir`."""
    return UML.devicetree_root(virtio_nodes(Backend(Path(workdir))))


def decompile(dtb: Path) -> str:
    return subprocess.run(
        ["dtc", "-q", "-I", "dtb", "-O", "dts", str(dtb)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_session_assigns_distinct_addresses_and_lines() -> None:
    a, b = device(origin="a"), device(IRQ_NODE, origin="b", gpios=("irq", "reset"))
    layout = Layout([a, b])
    pa, pb = layout.placement(a), layout.placement(b)
    assert pa.addr != pb.addr
    assert set(pb.gpios) == {"irq", "reset"} and pb.gpios["irq"] != pb.gpios["reset"]


def test_fixed_requests_are_honoured_and_not_handed_out_again() -> None:
    fixed = device(origin="fixed", addr=0x08, gpios={"irq": 0, "reset": None})
    other = device(IRQ_NODE, origin="other", gpios=("irq", "reset"))
    layout = Layout([other, fixed])
    assert layout.placement(fixed).addr == 0x08
    assert layout.placement(fixed).gpios["irq"] == 0
    assert layout.placement(other).addr != 0x08
    assert 0 not in layout.placement(other).gpios.values()


def test_taken_address_is_one_clear_error() -> None:
    with pytest.raises(PlacementError, match=r"I2C address 0x48 asked for by b .* taken by a"):
        Layout([device(origin="a", addr=0x48), device(origin="b", addr=0x48)])


def test_taken_gpio_line_is_one_clear_error() -> None:
    with pytest.raises(PlacementError, match=r"GPIO line 3 \(irq\) asked for by b .* taken by a"):
        Layout(
            [
                device(IRQ_NODE, origin="a", gpios={"irq": 3}),
                device(IRQ_NODE, origin="b", gpios={"irq": 3}),
            ]
        )


def test_out_of_range_requests_are_rejected() -> None:
    with pytest.raises(PlacementError, match="outside"):
        Layout([device(addr=0x78)])
    with pytest.raises(PlacementError, match="not in 0-63"):
        Layout([device(IRQ_NODE, gpios={"irq": 64})])


def test_undeclared_device_is_reported() -> None:
    with pytest.raises(PlacementError, match="not declared"):
        Layout([]).placement(device())


def test_unknown_placeholder_names_the_fragment() -> None:
    with pytest.raises(DevicetreeError, match=r"t.DEV: .*\$irq\$"):
        fill("t.DEV", IRQ_NODE, 0x10, {})


def test_tree_compiles_with_fragments_under_the_adapter(tmp_path: Path, include_root: Path) -> None:
    a, b = device(origin="a"), device(IRQ_NODE, origin="b", gpios=("irq", "reset"))
    layout = Layout([a, b])
    dtb = build(layout.fragments(), include_root, tmp_path / "w", uml_root("/w"))
    text = decompile(dtb)
    pa, pb = layout.placement(a), layout.placement(b)
    assert f"sensor@{pa.addr:x}" in text
    assert f"reg = <0x{pa.addr:02x}>" in text
    assert f"chip@{pb.addr:x}" in text
    assert f"interrupts = <0x{pb.gpios['irq']:02x} 0x02>" in text
    assert 'socket-path = "/w/i2c.sock"' in text and 'socket-path = "/w/gpio.sock"' in text


def test_malformed_fragment_names_its_origin(tmp_path: Path, include_root: Path) -> None:
    good, bad = (
        device(origin="tests/good.py"),
        device("sensor@$addr$ { reg = <0x$addr$> ", origin="tests/bad.py"),
    )
    with pytest.raises(
        DevicetreeError, match=r"^devicetree fragment of tests/bad.py does not compile: .+"
    ):
        build(Layout([good, bad]).fragments(), include_root, tmp_path / "w", uml_root())
    assert not (tmp_path / "w" / "guest.dtb").exists()


@pytest.mark.parametrize(
    ("broken", "failure"),
    [("reg = <0x$addr$>>;", "does not compile"), ("#include <nosuch.h>", "does not preprocess")],
)
def test_a_fragment_error_quotes_the_line(
    tmp_path: Path, include_root: Path, broken: str, failure: str
) -> None:
    # dtc and cpp count lines of the whole generated tree: the number alone points nowhere.
    bad = device(f"sensor@$addr$ {{\n{broken}\n}};", origin="tests/bad.py")
    filled = broken.replace("$addr$", f"{Layout([bad]).placement(bad).addr:x}")
    with pytest.raises(DevicetreeError) as err:
        build(Layout([bad]).fragments(), include_root, tmp_path / "w", uml_root())
    message = str(err.value)
    assert message.startswith(f"devicetree fragment of tests/bad.py {failure}: ")
    assert re.search(rf"\(line \d+: {re.escape(filled)}\)$", message), message


SUPPLY_NODE = """
    regulator@$addr$ {
        compatible = "acme,regulator";
        reg = <0x$addr$>;
        vout: output { };
    };
"""
CONSUMER_NODE = """
    acme-consumer {
        compatible = "acme,consumer";
        default-supply = <&vout>;
        enable-gpios = <&gpio $enable$ GPIO_ACTIVE_HIGH>;
    };
"""


def test_platform_devices_go_at_the_root_and_reference_i2c_labels(
    tmp_path: Path, include_root: Path
) -> None:
    supply = device(SUPPLY_NODE, origin="supply")
    consumer = PlatformDevice("acme,consumer", CONSUMER_NODE, gpios=("enable",), origin="c")
    layout = Layout([supply, consumer])
    assert layout.placement(consumer).addr is None
    dtb = build(layout.fragments(), include_root, tmp_path / "w", uml_root())

    def fdtget(*args: str) -> list[str]:
        return subprocess.run(
            ["fdtget", *args], capture_output=True, text=True, check=True
        ).stdout.split()

    assert "acme-consumer" in fdtget("-l", str(dtb), "/")
    enable = fdtget("-t", "x", str(dtb), "/acme-consumer", "enable-gpios")
    assert int(enable[1], 16) == layout.placement(consumer).gpios["enable"]


def test_platform_device_name_is_its_node_name() -> None:
    labelled = PlatformDevice("acme,consumer", "  con: my-consumer {\n};")
    assert labelled.node_name == "my-consumer"
    assert PlatformDevice("acme,consumer", CONSUMER_NODE).node_name == "acme-consumer"


def test_two_platform_nodes_with_one_name_are_one_clear_error() -> None:
    a = PlatformDevice("acme,consumer", CONSUMER_NODE, origin="a")
    b = PlatformDevice("acme,consumer", CONSUMER_NODE, origin="b")
    with pytest.raises(PlacementError, match="platform node name 'acme-consumer' asked for by b"):
        Layout([a, b])


def test_a_device_needs_the_platform_devices_its_node_refers_to_by_label() -> None:
    vref = PlatformDevice("regulator-fixed", "  vref: regulator-vref {\n};", origin="m.VREF")
    vdd = PlatformDevice("regulator-fixed", "vdd:regulator-vdd{\n};", origin="m.VDD")
    unlabelled = PlatformDevice("regulator-fixed", "regulator-x {\n};", origin="m.X")
    vrefs = PlatformDevice("regulator-fixed", "vrefs: regulator-vrefs {\n};", origin="m.S")
    adc = I2CDevice(
        "acme,adc",
        model=lambda: SimpleSMBusModel({}),
        dts="adc@$addr$ {\n vdd-supply = <&vdd>;\n vref-supply = <&vref>;\n};",
        origin="m.ADC",
    )
    declared: list[Device] = [adc, vref, vdd, unlabelled, vrefs]
    # In declaration order; `&vref` is not a reference to `vrefs`.
    assert suppliers(adc, declared) == [vref, vdd]
    assert suppliers(vref, declared) == []
