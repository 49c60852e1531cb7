"""A test can declare its own variant of a device's devicetree node: the session boots it a
guest whose tree has the variant, even one that cannot share a tree with the module's own
devices (here: a platform node of the same name)."""

from __future__ import annotations

import dataclasses

from scaffold import opt3001_sensor

from roadtest.models.opt3001 import OPT3001
from roadtest.testing import PlatformDevice, RoadtestSession, read_float, read_str
from roadtest.testing.guestpath import GuestPath

SENSOR = opt3001_sensor()

# No driver binds it: the test looks at the node the kernel made a platform device of.
BOARD_NODE = PlatformDevice(
    compatible="roadtest,variant-test",
    dts="""
        variant-node {
            compatible = "roadtest,variant-test";
            revision = "module";
        };
    """,
)


def of_property(dev_path: GuestPath, name: str) -> str:
    """A property of the device's devicetree node (a string, NUL-terminated)."""
    return read_str(dev_path / "of_node" / name).rstrip("\0")


def test_a_variant_declared_in_the_test_is_in_the_guests_tree(guest: RoadtestSession) -> None:
    variant = dataclasses.replace(
        SENSOR,
        dts=SENSOR.dts.replace("light-sensor@", "lux@").replace("reg =", 'label = "v"; reg ='),
    )
    model = OPT3001()
    with guest.bound(variant, model) as dev:
        assert of_property(dev.path, "name") == "lux"
        assert of_property(dev.path, "label") == "v"
        model.result = 0x3456  # the driver bound, and reads the model through the variant
        assert read_float(dev.path.only("iio:device*") / "in_illuminance_input") == 88.80


def test_a_variant_that_clashes_with_the_modules_node_gets_its_own_tree(
    guest: RoadtestSession,
) -> None:
    variant = dataclasses.replace(BOARD_NODE, dts=BOARD_NODE.dts.replace('"module"', '"test"'))
    dev = guest.attach(variant)
    assert of_property(dev.path, "revision") == "test"


def test_the_modules_node_is_back_after_a_variant(guest: RoadtestSession) -> None:
    dev = guest.attach(BOARD_NODE)
    assert of_property(dev.path, "revision") == "module"
