"""MAX17048 datasheet property (drivers/power/supply/max17040_battery.c), through
/sys/class/power_supply.

Datasheet MAX17048/MAX17049 (19-6171 Rev 7): VCELL is the cell voltage at 78.125 uV a
bit over all 16 bits (0 to 5.12 V); SOC's high byte is whole percent, its low byte
1/256 %. The power-supply ABI gives voltage_now in microvolts and capacity in percent.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roadtest.models.max17048 import MAX17048
from roadtest.testing import I2CDevice, RoadtestSession, read_int

pytestmark = pytest.mark.roadtest_time("sim")

GAUGE = I2CDevice(
    compatible="maxim,max17048",
    model=MAX17048,
    dts="""
        fuel-gauge@$addr$ {
            compatible = "maxim,max17048";
            reg = <0x$addr$>;
        };
    """,
)


@given(vcell=st.integers(0, 0xFFFF), soc=st.integers(0, 0xFFFF))
def test_every_reading_is_the_datasheet_value(guest: RoadtestSession, vcell: int, soc: int) -> None:
    dev = guest.bound_for_examples(GAUGE)
    dev.model.vcell = vcell
    dev.model.soc = soc
    bat = dev.path / "power_supply" / "battery"
    # Whole microvolts of vcell * 78.125 uV, the fraction dropped; whole percent.
    assert read_int(bat / "voltage_now") == int(vcell * 78.125)
    assert read_int(bat / "capacity") == soc >> 8
