"""The guest's devicetree looks like a board's to the kernel (a root with a compatible)."""

from __future__ import annotations

from roadtest.testing import PlatformDevice, RoadtestSession, read_int

# A consumer whose node names no supply: like the many I2C drivers that ask for a
# vdd/vs supply the board's devicetree does not describe.
UNSUPPLIED_CONSUMER = PlatformDevice(
    compatible="regulator-virtual-consumer",
    dts="""
        unsupplied-consumer {
            compatible = "regulator-virtual-consumer";
        };
    """,
)


def test_a_supply_the_devicetree_does_not_name_gets_a_dummy_regulator(
    guest: RoadtestSession,
) -> None:
    # The regulator core hands out dummy supplies only when the devicetree is a populated
    # one (of_have_populated_dt(): its root has a compatible); otherwise probe fails.
    with guest.bound(UNSUPPLIED_CONSUMER) as consumer:
        assert read_int(consumer.path / "min_microvolts") == 0
