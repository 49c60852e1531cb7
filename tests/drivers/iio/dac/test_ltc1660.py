"""Linear Technology LTC1660/LTC1665 octal DACs over SPI (drivers/iio/dac/ltc1660.c), against
the datasheet (roadtest/models/ltc1660.py cites it) through the IIO sysfs ABI
(Documentation/ABI/testing/sysfs-bus-iio): out_voltageY_raw, the code of one DAC,
out_voltage_scale in millivolts a code.

The driver numbers its eight channels by their DAC's control code, 1 (DAC A) to 8 (DAC H):
out_voltage1_raw to out_voltage8_raw. It kept the codes written in an array of eight
indexed by that number, so DAC H's write and read went one past the array (UBSAN
array-index-out-of-bounds; kernel-patches/iio/0021 indexes it from DAC A).
"""

from __future__ import annotations

import functools

import pytest

from roadtest.models.ltc1660 import DACS, LTC1660, LTC1665, LTC166x, Part
from roadtest.testing import (
    BoundDevice,
    RoadtestSession,
    SPIDevice,
    fixed_regulator,
    read_int,
    read_str,
    write_str,
)
from roadtest.testing.guestpath import GuestPath

VREF_MV = 4096

VREF = fixed_regulator("ltc1660_vref", VREF_MV * 1000)


def declare(part: Part) -> SPIDevice[LTC166x]:
    return SPIDevice(
        compatible=f"lltc,{part.name}",
        model=functools.partial(LTC166x, part),
        dts=f"""
            dac@$addr$ {{
                compatible = "lltc,{part.name}";
                reg = <$addr$>;
                spi-max-frequency = <1000000>;
                vref-supply = <&ltc1660_vref>;
            }};
        """,
    )


DAC1660 = declare(LTC1660)  # 10 bits
DAC1665 = declare(LTC1665)  # 8 bits

PARTS = [(DAC1660, LTC1660), (DAC1665, LTC1665)]
IDS = ["ltc1660", "ltc1665"]


def iio(dev: BoundDevice[LTC166x]) -> GuestPath:
    return dev.path.only("iio:device*")


@pytest.mark.parametrize("device,part", PARTS, ids=IDS)
def test_scale_is_vref_over_2_to_the_resolution(
    guest: RoadtestSession, device: SPIDevice[LTC166x], part: Part
) -> None:
    with guest.bound(VREF), guest.bound(device) as dev:
        nano = (VREF_MV * 10**9) >> part.bits
        assert read_str(iio(dev) / "out_voltage_scale") == f"{nano // 10**9}.{nano % 10**9:09d}"


@pytest.mark.parametrize("device,part", PARTS, ids=IDS)
def test_each_channel_loads_its_own_dac(
    guest: RoadtestSession, device: SPIDevice[LTC166x], part: Part
) -> None:
    """out_voltage1_raw is DAC A ... out_voltage8_raw DAC H: each write loads that DAC
    alone (one 16-bit word), and each channel reads back the code written to it."""
    with guest.bound(VREF), guest.bound(device) as dev:
        full = (1 << part.bits) - 1
        codes = [full - 17 * i for i in range(DACS)]  # all different, DAC H's too
        for i, code in enumerate(codes):
            write_str(iio(dev) / f"out_voltage{i + 1}_raw", str(code))
            assert dev.model.dac[i] == code
            assert dev.model.dac[i + 1 :] == [0] * (DACS - 1 - i)
        assert dev.model.dac == codes
        for i, code in enumerate(codes):
            assert read_int(iio(dev) / f"out_voltage{i + 1}_raw") == code
        # A code is the DAC's output in steps of VREF / 2^n.
        assert dev.model.output(DACS - 1, VREF_MV / 1000) == pytest.approx(
            codes[-1] * VREF_MV / 1000 / (1 << part.bits)
        )


@pytest.mark.parametrize("device,part", PARTS, ids=IDS)
def test_a_code_beyond_the_resolution_is_refused(
    guest: RoadtestSession, device: SPIDevice[LTC166x], part: Part
) -> None:
    with guest.bound(VREF), guest.bound(device) as dev:
        write_str(iio(dev) / "out_voltage8_raw", "5")
        for value in (str(1 << part.bits), "-1"):
            with pytest.raises(OSError):
                write_str(iio(dev) / "out_voltage8_raw", value)
        assert dev.model.dac[DACS - 1] == 5
        assert read_int(iio(dev) / "out_voltage8_raw") == 5
