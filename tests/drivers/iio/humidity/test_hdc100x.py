"""HDC1080 humidity and temperature sensor (drivers/iio/humidity/hdc100x.c), against TI's
datasheet SNAS672A (HDC1000: SNAS643).

The IIO ABI (Documentation/ABI/testing/sysfs-bus-iio): a value in its unit is
(raw + offset) * scale, millidegrees Celsius and milli-percent relative humidity. The
datasheet's formulas, computed here: T = raw / 2^16 * 165 - 40 degC, RH = raw / 2^16 *
100 %. Error paths (a transfer NACKed) are in tests/guest/test_hdc100x_errors.py: a
script of failed transfers is not a golden trace's I/O.
"""

from __future__ import annotations

import errno

import pytest

from roadtest.models.hdc100x import HDC100x
from roadtest.testing import I2CDevice, RoadtestSession, read_float, read_int, read_str, write_str
from roadtest.testing.guestpath import GuestPath

SENSOR = I2CDevice(
    compatible="ti,hdc1080",
    model=HDC100x,
    dts="""
        humidity-sensor@$addr$ {
            compatible = "ti,hdc1080";
            reg = <0x$addr$>;
        };
    """,
)


CONFIGURATION = 0x02  # "Register Map"
HEAT = 1 << 13
TRES_11BIT = 1 << 10
HRES_11BIT, HRES_8BIT = 0b01 << 8, 0b10 << 8


def iio(dev_path: GuestPath) -> GuestPath:
    return dev_path.only("iio:device*")


def datasheet_code(fraction: float, bits: int = 14) -> int:
    """A 16-bit result for `fraction` of full scale, its `bits` most significant bits
    converted and the rest 0 ("Temperature Register", "Humidity Register")."""
    raw = min(round(fraction * 65536), 0xFFFF)
    return raw & ~((1 << (16 - bits)) - 1)


def in_unit(channel: GuestPath, name: str) -> float:
    """(raw + offset) * scale of the IIO ABI, offset 0 when the channel has none."""
    raw = read_int(channel / f"{name}_raw")
    offset_file = channel / f"{name}_offset"
    offset = read_float(offset_file) if offset_file.exists() else 0.0
    return (raw + offset) * read_float(channel / f"{name}_scale")


def test_probe_sets_a_known_configuration(guest: RoadtestSession) -> None:
    with guest.bound(SENSOR) as dev:
        # 14-bit temperature and humidity, heater off, MODE 0 (one quantity per trigger):
        # the driver reads the two channels one at a time.
        dev.model.assert_last_reg_write(CONFIGURATION, 0x0000)
        assert read_int(iio(dev.path) / "out_current_heater_raw") == 0


@pytest.mark.parametrize("degc", [-40, -10, 0, 25, 42.5, 60, 85, 124.99])
def test_temperature(guest: RoadtestSession, degc: float) -> None:
    with guest.bound(SENSOR) as dev:
        dev.model.temperature = degc
        channel = iio(dev.path)
        code = datasheet_code((degc + 40) / 165)
        assert read_int(channel / "in_temp_raw") == code
        expected_mdegc = (code / 2**16 * 165 - 40) * 1000
        assert in_unit(channel, "in_temp") == pytest.approx(expected_mdegc, abs=0.01)


@pytest.mark.parametrize("rh", [0, 12.5, 50, 75, 99.99])
def test_humidity(guest: RoadtestSession, rh: float) -> None:
    with guest.bound(SENSOR) as dev:
        dev.model.humidity = rh
        channel = iio(dev.path)
        code = datasheet_code(rh / 100)
        assert read_int(channel / "in_humidityrelative_raw") == code
        expected = code / 2**16 * 100 * 1000
        assert in_unit(channel, "in_humidityrelative") == pytest.approx(expected, abs=0.01)


def test_integration_times(guest: RoadtestSession) -> None:
    """The conversion times of "Electrical Characteristics", set through TRES and HRES."""
    with guest.bound(SENSOR) as dev:
        channel = iio(dev.path)
        # The driver names its lists without the ABI's "in_" prefix
        # (IIO_CONST_ATTR(temp_integration_time_available, ...)).
        temp_times = read_str(channel / "temp_integration_time_available").split()
        hum_times = read_str(channel / "humidityrelative_integration_time_available").split()
        assert sorted(map(float, temp_times)) == [0.00365, 0.00635]
        assert sorted(map(float, hum_times)) == [0.0025, 0.00385, 0.0065]
        assert read_float(channel / "in_temp_integration_time") == 0.00635
        assert read_float(channel / "in_humidityrelative_integration_time") == 0.0065

        write_str(channel / "in_temp_integration_time", "0.00365")
        dev.model.assert_last_reg_write(CONFIGURATION, TRES_11BIT)
        write_str(channel / "in_humidityrelative_integration_time", "0.0025")
        dev.model.assert_last_reg_write(CONFIGURATION, TRES_11BIT | HRES_8BIT)
        write_str(channel / "in_humidityrelative_integration_time", "0.00385")
        dev.model.assert_last_reg_write(CONFIGURATION, TRES_11BIT | HRES_11BIT)
        assert read_float(channel / "in_temp_integration_time") == 0.00365
        assert read_float(channel / "in_humidityrelative_integration_time") == 0.00385

        writes = len(dev.model.reg_writes(CONFIGURATION))
        with pytest.raises(OSError) as raised:
            write_str(channel / "in_temp_integration_time", "0.005")
        assert raised.value.errno == errno.EINVAL
        assert len(dev.model.reg_writes(CONFIGURATION)) == writes


@pytest.mark.parametrize(("temp_time", "tres_bits"), [("0.00635", 14), ("0.00365", 11)])
def test_temperature_at_each_resolution(
    guest: RoadtestSession, temp_time: str, tres_bits: int
) -> None:
    with guest.bound(SENSOR) as dev:
        dev.model.temperature = 33.3
        channel = iio(dev.path)
        write_str(channel / "in_temp_integration_time", temp_time)
        assert read_int(channel / "in_temp_raw") == datasheet_code(73.3 / 165, tres_bits)


def test_heater(guest: RoadtestSession) -> None:
    with guest.bound(SENSOR) as dev:
        heater = iio(dev.path) / "out_current_heater_raw"
        assert read_str(iio(dev.path) / "out_current_heater_raw_available") == "0 1"
        write_str(heater, "1")
        dev.model.assert_last_reg_write(CONFIGURATION, HEAT)
        assert read_int(heater) == 1
        write_str(heater, "0")
        dev.model.assert_last_reg_write(CONFIGURATION, 0x0000)
        assert read_int(heater) == 0


@pytest.mark.roadtest_time("sim")
@pytest.mark.parametrize(("temp_time", "hum_time"), [("0.00635", "0.0065"), ("0.00365", "0.0025")])
def test_reads_wait_for_the_conversion(
    guest: RoadtestSession, temp_time: str, hum_time: str
) -> None:
    """The model NACKs a read before the conversion time has passed on the guest's clock
    (6.35/3.65 ms temperature, 6.50/2.50 ms humidity): the driver's reads get through."""
    with guest.bound(SENSOR) as dev:
        model = dev.model
        model.temperature, model.humidity = 20, 40
        channel = iio(dev.path)
        write_str(channel / "in_temp_integration_time", temp_time)
        write_str(channel / "in_humidityrelative_integration_time", hum_time)
        assert read_int(channel / "in_temp_raw") > 0
        assert read_int(channel / "in_humidityrelative_raw") > 0
        assert [pointer for _, pointer in model.measurements] == [0x00, 0x01]


def test_identity_is_not_checked(guest: RoadtestSession) -> None:
    """The driver reads neither the Manufacturer ID (0x5449) nor the Device ID: a part
    that answers with another device ID binds and measures."""
    with guest.bound(SENSOR, HDC100x(device_id=0x0000)) as dev:
        dev.model.humidity = 50
        assert read_int(iio(dev.path) / "in_humidityrelative_raw") == 0x8000


def test_temperature_scan_element_is_unsigned(guest: RoadtestSession) -> None:
    with guest.bound(SENSOR) as dev:
        scan = iio(dev.path) / "scan_elements"
        assert read_str(scan / "in_humidityrelative_type") == "be:u16/16>>0"
        assert read_str(scan / "in_temp_type") == "be:u16/16>>0"


def test_unbind(guest: RoadtestSession) -> None:
    dev = guest.attach(SENSOR)
    dev.bind()
    assert iio(dev.path).exists()
    dev.unbind()
    assert not list(dev.path.glob("iio:device*"))
