"""SHT3x-DIS datasheet property (drivers/hwmon/sht3x.c): any measurement the chip sends
reads through hwmon as section 4.13's conversion formulas say ("Datasheet SHT3x-DIS",
Sensirion, Version 5, May 2018):

    T = -45 + 175 * ST / (2^16 - 1) degC,  RH = 100 * SRH / (2^16 - 1) %RH

for every 16-bit ST and SRH, within one step of the output and one milli-unit (the driver
divides by 2^16 and truncates: see test_sht3x.py).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from roadtest.models.sht3x import SHT3x
from roadtest.testing import I2CDevice, RoadtestSession, read_int

SENSOR = I2CDevice(
    compatible="sensirion,sht3x",
    model=SHT3x,
    dts="""
        humidity-sensor@$addr$ {
            compatible = "sensirion,sht3x";
            reg = <0x$addr$>;
        };
    """,
)

WORDS = st.integers(0, 0xFFFF)


@given(st_raw=WORDS, srh_raw=WORDS)
def test_every_measurement_converts_as_the_datasheet_says(
    guest: RoadtestSession, st_raw: int, srh_raw: int
) -> None:
    dev = guest.bound_for_examples(SENSOR)
    dev.model.temperature = -45 + 175 * st_raw / 0xFFFF  # the model sends ST = st_raw
    dev.model.humidity = 100 * srh_raw / 0xFFFF
    hwmon = (dev.path / "hwmon").only("hwmon*")
    guest.sleep(0.02)  # past the jiffy of the last example's reading, which the driver keeps
    t = read_int(hwmon / "temp1_input")
    rh = read_int(hwmon / "humidity1_input")
    assert abs(t - (-45 + 175 * st_raw / 0xFFFF) * 1000) <= 175_000 / 0xFFFF + 1
    assert abs(rh - 100 * srh_raw / 0xFFFF * 1000) <= 100_000 / 0xFFFF + 1
