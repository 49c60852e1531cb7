"""Bosch BMP280 (drivers/iio/pressure/bmp280-core.c with bmp280-i2c.c and bmp280-spi.c),
one model on both buses: I2C at 0x76 and 0x77 (the SDO pin's two addresses) and SPI, against
the datasheet BST-BMP280-DS001 rev. 1.23.

Every expected reading is computed here from the datasheet's own formulas (3.11.3, the
32-bit integer temperature and the 64-bit integer pressure compensation) on the datasheet's
example trimming parameters and raw values (3.12, Table 16: dig_T1 = 27504 ...,
adc_T = 519888 gives 25.08 degC, adc_P = 415148 gives 100653.27 Pa), never from the driver
or the model. The IIO ABI (Documentation/ABI/testing/sysfs-bus-iio): in_temp_input in
milli degrees Celsius, in_pressure_input in kilopascal.

The driver's runtime PM suspends the chip 200 ms after its last access and configures it
again at the next one, so its I/O follows the guest's clock: on a real-time guest (x86_64)
reads land after a suspend, under simulated time before. So that one golden trace serves
both, the tests forbid runtime PM before binding (power/control = "on", the ABI's way to
keep a device active, Documentation/ABI/testing/sysfs-devices-power), as userspace may.
"""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Iterator
from typing import Final

import pytest

from roadtest.models.bmp280 import BMP280, Calibration
from roadtest.testing import (
    I2CDevice,
    RoadtestSession,
    SPIDevice,
    read_float,
    read_str,
    write_int,
    write_str,
)
from roadtest.testing.session import BoundDevice

DTS_I2C: Final = """
    pressure-sensor@$addr$ {
        compatible = "bosch,bmp280";
        reg = <0x$addr$>;
    };
"""
AT_0X76 = I2CDevice(compatible="bosch,bmp280", model=BMP280, addr=0x76, dts=DTS_I2C)
AT_0X77 = I2CDevice(compatible="bosch,bmp280", model=BMP280, addr=0x77, dts=DTS_I2C)
ON_SPI = SPIDevice(
    compatible="bosch,bmp280",
    model=BMP280,
    dts="""
        pressure-sensor@$addr$ {
            compatible = "bosch,bmp280";
            reg = <$addr$>;
            spi-max-frequency = <10000000>;
        };
    """,
)
BUSES = pytest.mark.parametrize(
    "device", [AT_0X76, AT_0X77, ON_SPI], ids=["i2c-0x76", "i2c-0x77", "spi"]
)

EXAMPLE = Calibration()  # the datasheet's Table 16 (checked below, not assumed)
ADC_T: Final = 519888
ADC_P: Final = 415148


# The datasheet's compensation (3.11.3), in C's integer arithmetic: >> is arithmetic,
# / truncates toward zero.


def c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def t_fine(adc_t: int, c: Calibration) -> int:
    var1 = (((adc_t >> 3) - (c.dig_T1 << 1)) * c.dig_T2) >> 11
    var2 = (((((adc_t >> 4) - c.dig_T1) * ((adc_t >> 4) - c.dig_T1)) >> 12) * c.dig_T3) >> 14
    return var1 + var2


def temperature_centidegrees(adc_t: int, c: Calibration) -> int:
    """BMP280_compensate_T_int32: "5123" equals 51.23 DegC."""
    return (t_fine(adc_t, c) * 5 + 128) >> 8


def pressure_q24_8(adc_p: int, adc_t: int, c: Calibration) -> int:
    """BMP280_compensate_P_int64: Pa in Q24.8 ("24674867" is 96386.2 Pa)."""
    var1 = t_fine(adc_t, c) - 128000
    var2 = var1 * var1 * c.dig_P6
    var2 = var2 + ((var1 * c.dig_P5) << 17)
    var2 = var2 + (c.dig_P4 << 35)
    var1 = ((var1 * var1 * c.dig_P3) >> 8) + ((var1 * c.dig_P2) << 12)
    var1 = (((1 << 47) + var1) * c.dig_P1) >> 33
    if var1 == 0:
        return 0
    p = 1048576 - adc_p
    p = c_div(((p << 31) - var2) * 3125, var1)
    var1 = (c.dig_P9 * (p >> 13) * (p >> 13)) >> 25
    var2 = (c.dig_P8 * p) >> 19
    return ((p + var1 + var2) >> 8) + (c.dig_P7 << 4)


def at_resolution(adc: int, ratio: int) -> int:
    """The raw value at the resolution an oversampling ratio gives (Tables 4 and 5: x1 16
    bit, x2 17 bit ... x16 20 bit): the bits below it 0."""
    bits = 16 + ratio.bit_length() - 1
    return adc & ~((1 << (20 - bits)) - 1)


def test_the_formulas_give_the_datasheets_example() -> None:
    # Table 16's results, so the formulas above are the datasheet's.
    assert t_fine(ADC_T, EXAMPLE) == 128422
    assert temperature_centidegrees(ADC_T, EXAMPLE) == 2508
    # Table 16 computes the pressure in floating point (100653.27 Pa); the 64-bit integer
    # formula's Q24.8 result is within its 1/256 Pa steps of rounding of it.
    pascal = pressure_q24_8(ADC_P, ADC_T, EXAMPLE) / 256
    assert pascal == pytest.approx(100653.27, abs=0.05)


@contextlib.contextmanager
def bound(
    guest: RoadtestSession,
    device: I2CDevice[BMP280] | SPIDevice[BMP280],
    model: BMP280 | None = None,
) -> Iterator[BoundDevice[BMP280]]:
    """The device bound with runtime PM forbidden (see the module's docstring)."""
    dev = guest.attach(device, model)
    control = dev.path / "power" / "control"
    try:
        write_str(control, "on")
        dev.bind()
        yield dev
    finally:
        guest.detach(dev)
        write_str(control, "auto")


@BUSES
def test_datasheet_example(
    guest: RoadtestSession, device: I2CDevice[BMP280] | SPIDevice[BMP280]
) -> None:
    with bound(guest, device) as dev:
        d = dev.path.only("iio:device*")
        assert read_str(d / "name") == "bmp280"
        temp = temperature_centidegrees(ADC_T, EXAMPLE)
        assert read_float(d / "in_temp_input") == temp * 10  # 25080 m degC
        press = pressure_q24_8(ADC_P, ADC_T, EXAMPLE)
        assert read_float(d / "in_pressure_input") == pytest.approx(press / 256 / 1000, abs=1e-9)


@BUSES
def test_probe_configures_the_chip(
    guest: RoadtestSession, device: I2CDevice[BMP280] | SPIDevice[BMP280]
) -> None:
    with bound(guest, device) as dev:
        d = dev.path.only("iio:device*")
        # The driver's defaults, as the IIO ABI reports them.
        assert read_str(d / "in_temp_oversampling_ratio") == "2"
        assert read_str(d / "in_pressure_oversampling_ratio") == "16"
        # ctrl_meas (Table 20/22/24): osrs_t 010 (x2), osrs_p 101 (x16), mode 11 (normal).
        assert dev.model.regs[0xF4] == 0b010_101_11


@BUSES
def test_probe_sets_the_filter(
    guest: RoadtestSession, device: I2CDevice[BMP280] | SPIDevice[BMP280]
) -> None:
    with bound(guest, device) as dev:
        # config (Table 26, Table 7): filter[2:0] at bits 4:2, 010 for coefficient 4.
        assert dev.model.regs[0xF5] == 0b000_010_00


@BUSES
@pytest.mark.parametrize("adc_t", [600000, ADC_T, 450000, 440000, 400000])
def test_temperature(
    guest: RoadtestSession, device: I2CDevice[BMP280] | SPIDevice[BMP280], adc_t: int
) -> None:
    """BMP280_compensate_T_int32(): T = (t_fine * 5 + 128) >> 8, so a negative temperature
    rounds down (440000 and 400000 are below 0 degC: without kernel-patches/iio/0019 the
    driver divided by 256, rounding toward zero, 0.01 degC above the datasheet's)."""
    with bound(guest, device) as dev:
        dev.model.adc_t = adc_t
        expected = temperature_centidegrees(at_resolution(adc_t, 2), EXAMPLE) * 10
        assert read_float(dev.path.only("iio:device*") / "in_temp_input") == expected


@BUSES
@pytest.mark.parametrize("adc_p", [300000, ADC_P, 500000])
def test_pressure(
    guest: RoadtestSession, device: I2CDevice[BMP280] | SPIDevice[BMP280], adc_p: int
) -> None:
    with bound(guest, device) as dev:
        dev.model.adc_p = adc_p
        expected = pressure_q24_8(adc_p, ADC_T, EXAMPLE) / 256 / 1000
        got = read_float(dev.path.only("iio:device*") / "in_pressure_input")
        assert got == pytest.approx(expected, abs=1e-9)


@BUSES
def test_oversampling(
    guest: RoadtestSession, device: I2CDevice[BMP280] | SPIDevice[BMP280]
) -> None:
    with bound(guest, device) as dev:
        d = dev.path.only("iio:device*")
        write_int(d / "in_temp_oversampling_ratio", 16)
        write_int(d / "in_pressure_oversampling_ratio", 1)
        assert read_str(d / "in_temp_oversampling_ratio") == "16"
        assert read_str(d / "in_pressure_oversampling_ratio") == "1"
        # osrs_t 101 (x16), osrs_p 001 (x1), still normal mode.
        assert dev.model.regs[0xF4] == 0b101_001_11
        # At x1 the pressure is a 16-bit measurement (Table 5): its 4 low bits are 0.
        adc_p = 0x6559F
        dev.model.adc_p = adc_p
        expected = pressure_q24_8(at_resolution(adc_p, 1), ADC_T, EXAMPLE) / 256 / 1000
        assert read_float(d / "in_pressure_input") == pytest.approx(expected, abs=1e-9)
        with pytest.raises(OSError) as info:
            write_int(d / "in_temp_oversampling_ratio", 3)
        assert info.value.errno == errno.EINVAL


@BUSES
def test_other_trimming(
    guest: RoadtestSession, device: I2CDevice[BMP280] | SPIDevice[BMP280]
) -> None:
    """The trimming parameters are read from the chip at probe, each word little-endian."""
    trimming = Calibration(dig_T1=27000, dig_T2=27000, dig_T3=-900, dig_P1=37000, dig_P9=5000)
    with bound(guest, device, BMP280(calibration=trimming)) as dev:
        d = dev.path.only("iio:device*")
        assert read_float(d / "in_temp_input") == temperature_centidegrees(ADC_T, trimming) * 10
        expected = pressure_q24_8(ADC_P, ADC_T, trimming) / 256 / 1000
        assert read_float(d / "in_pressure_input") == pytest.approx(expected, abs=1e-9)


@BUSES
def test_unknown_chip_id(
    guest: RoadtestSession, device: I2CDevice[BMP280] | SPIDevice[BMP280]
) -> None:
    """A chip whose id register does not read 0x58 (here the BMP180's 0x55). 6.12's driver
    does not refuse it: it warns and goes on (bmp280_common_probe: "bad chip id"), so that
    a devicetree naming a compatible chip still probes."""
    with bound(guest, device, BMP280(chip_id=0x55)) as dev:
        guest.assert_kernel_log(r"bad chip id: 0x55 is not a known chip id")
        assert dev.path.only("iio:device*").exists()


@BUSES
def test_unbind(guest: RoadtestSession, device: I2CDevice[BMP280] | SPIDevice[BMP280]) -> None:
    with bound(guest, device) as dev:
        name = dev.path.only("iio:device*").name
        dev.model.reset_reg_writes()
    assert not guest.path(f"/sys/bus/iio/devices/{name}").exists()
    assert dev.model.all_reg_writes() == []  # the driver leaves the chip as it was
