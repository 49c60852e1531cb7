"""Sensirion SHT3x-DIS (drivers/hwmon/sht3x.c) against "Datasheet SHT3x-DIS" (Sensirion,
Version 5, May 2018) and the application note "Alert Mode of SHT3x-DIS" (Version 1, May
2015), through the hwmon ABI (Documentation/hwmon/sht3x.rst, sysfs-interface.rst).

The expected readings are the datasheet's formulas (section 4.13) computed here:
T = -45 + 175 * ST / (2^16 - 1) degC and RH = 100 * SRH / (2^16 - 1) %RH. The driver
divides by 2^16, not 2^16 - 1 (a scale 1/65535 smaller): it reads up to 3 m degC and
1.5 m %RH low at full scale, under one step of the 16-bit output (2.67 m degC, 1.53 m
%RH), and truncates to whole milli-units, so the readings are held to the datasheet's
value within one step and one milli-unit.
"""

from __future__ import annotations

import errno

import pytest

from roadtest.models.sht3x import SHT3x, humidity_ticks, temperature_ticks
from roadtest.testing import GuestPath, I2CDevice, RoadtestSession, read_int, write_int

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

# One step of the 16-bit output, and the driver's truncation to a whole milli-unit.
T_STEP = 175_000 / 0xFFFF + 1  # m degC
RH_STEP = 100_000 / 0xFFFF + 1  # m %RH

# Table 9 (single shot, no clock stretching) and Table 10 (periodic, by mps), Table 11.
SINGLE_HIGH, SINGLE_MEDIUM, SINGLE_LOW = 0x2400, 0x240B, 0x2416
FETCH_DATA, BREAK = 0xE000, 0x3093
HEATER_ON, HEATER_OFF, CLEAR_STATUS = 0x306D, 0x3066, 0x3041


def millidegc(st: int) -> float:
    return (-45 + 175 * st / 0xFFFF) * 1000


def millirh(srh: int) -> float:
    return 100 * srh / 0xFFFF * 1000


def hwmon_of(dev_path: GuestPath) -> GuestPath:
    return (dev_path / "hwmon").only("hwmon*")


def test_probe_clears_status_and_reads_limits(guest: RoadtestSession) -> None:
    with guest.bound(SENSOR) as dev:
        # The probe's first command clears the status register (Table 19).
        assert dev.model.opcodes()[0] == CLEAR_STATUS
        hwmon = hwmon_of(dev.path)
        assert (hwmon / "name").read_text().strip() == "sht3x"
        # The limits at power-up, in the alert note's reduced format: T's 9 MSBs in bits
        # 8..0, RH's 7 MSBs in bits 15..9 of 0xCD33, 0xC92D, 0x3869, 0x3466.
        for attr, word in (
            ("max", 0xCD33),
            ("max_hyst", 0xC92D),
            ("min_hyst", 0x3869),
            ("min", 0x3466),
        ):
            t = read_int(hwmon / f"temp1_{attr}")
            rh = read_int(hwmon / f"humidity1_{attr}")
            assert abs(t - millidegc((word & 0x1FF) << 7)) <= T_STEP
            assert abs(rh - millirh(word & 0xFE00)) <= RH_STEP


@pytest.mark.parametrize(
    ("degc", "rh"), [(-45, 0), (-10.5, 5), (0, 20), (25, 50), (60.25, 80), (130, 100)]
)
def test_single_shot_reading(guest: RoadtestSession, degc: float, rh: float) -> None:
    with guest.bound(SENSOR) as dev:
        dev.model.temperature, dev.model.humidity = degc, rh
        hwmon = hwmon_of(dev.path)
        st, srh = temperature_ticks(degc), humidity_ticks(rh)
        assert abs(read_int(hwmon / "temp1_input") - millidegc(st)) <= T_STEP
        assert abs(read_int(hwmon / "humidity1_input") - millirh(srh)) <= RH_STEP
        # Single shot, high repeatability by default (both read from one measurement when
        # in the same jiffy: the driver keeps it for the jiffy).
        assert SINGLE_HIGH in dev.model.opcodes()


def test_repeatability_attribute(guest: RoadtestSession) -> None:
    with guest.bound(SENSOR) as dev:
        hwmon = hwmon_of(dev.path)
        assert read_int(hwmon / "repeatability") == 2  # high, the driver's default
        for value in (0, 1, 2):
            write_int(hwmon / "repeatability", value)
            assert read_int(hwmon / "repeatability") == value
        with pytest.raises(OSError) as info:
            write_int(hwmon / "repeatability", 3)
        assert info.value.errno == errno.EINVAL


@pytest.mark.parametrize(("value", "command"), [(0, SINGLE_LOW), (1, SINGLE_MEDIUM)])
def test_repeatability_selects_the_single_shot_command(
    guest: RoadtestSession, value: int, command: int
) -> None:
    with guest.bound(SENSOR) as dev:
        hwmon = hwmon_of(dev.path)
        write_int(hwmon / "repeatability", value)
        guest.sleep(0.02)  # past the jiffy of any reading the driver keeps
        read_int(hwmon / "temp1_input")
        assert dev.model.opcodes()[-1] == command


def test_heater(guest: RoadtestSession) -> None:
    with guest.bound(SENSOR) as dev:
        heater = hwmon_of(dev.path) / "heater_enable"
        assert read_int(heater) == 0
        write_int(heater, 1)
        assert dev.model.opcodes()[-1] == HEATER_ON
        assert read_int(heater) == 1  # status bit 13 (Table 18)
        write_int(heater, 0)
        assert dev.model.opcodes()[-1] == HEATER_OFF
        assert read_int(heater) == 0


# Table 10's commands, high repeatability, by update interval (ms: 1000 / mps).
PERIODIC = [(2000, 0x2032), (1000, 0x2130), (500, 0x2236), (250, 0x2334), (100, 0x2737)]


@pytest.mark.parametrize(("interval", "command"), PERIODIC)
def test_periodic_mode(guest: RoadtestSession, interval: int, command: int) -> None:
    with guest.bound(SENSOR) as dev:
        hwmon = hwmon_of(dev.path)
        assert read_int(hwmon / "update_interval") == 0
        write_int(hwmon / "update_interval", interval)
        assert read_int(hwmon / "update_interval") == interval
        assert dev.model.opcodes()[-1] == command
        dev.model.temperature, dev.model.humidity = 31.5, 42
        guest.sleep(interval / 1000 + 0.05)  # the first measurement is in
        assert abs(read_int(hwmon / "temp1_input") - millidegc(temperature_ticks(31.5))) <= T_STEP
        assert abs(read_int(hwmon / "humidity1_input") - millirh(humidity_ticks(42))) <= RH_STEP
        assert dev.model.opcodes()[-1] == FETCH_DATA
        # Back to single shot: Break first (section 4.7), then single-shot reads.
        write_int(hwmon / "update_interval", 0)
        assert dev.model.opcodes()[-1] == BREAK
        guest.sleep(0.02)  # past the jiffy of the last reading, which the driver keeps
        read_int(hwmon / "temp1_input")
        assert dev.model.opcodes()[-1] == SINGLE_HIGH


def test_update_interval_rounds_to_a_faster_one(guest: RoadtestSession) -> None:
    with guest.bound(SENSOR) as dev:
        hwmon = hwmon_of(dev.path)
        write_int(hwmon / "update_interval", 700)  # between 1000 and 500: 500
        assert read_int(hwmon / "update_interval") == 500
        write_int(hwmon / "update_interval", 10)  # faster than all: 100
        assert read_int(hwmon / "update_interval") == 100
        assert dev.model.opcodes()[-3:] == [0x2236, BREAK, 0x2737]


# Limit writes: (attribute, the alert note's limit name).
LIMITS = [
    ("max", "high_set"),
    ("max_hyst", "high_clear"),
    ("min_hyst", "low_clear"),
    ("min", "low_set"),
]


@pytest.mark.parametrize(("attr", "limit"), LIMITS)
def test_limits(guest: RoadtestSession, attr: str, limit: str) -> None:
    with guest.bound(SENSOR) as dev:
        hwmon = hwmon_of(dev.path)
        write_int(hwmon / f"temp1_{attr}", 40_000)
        write_int(hwmon / f"humidity1_{attr}", 70_000)
        word = dev.model.limits[limit]  # accepted, so its CRC was right (Table 20)
        # T's 9 MSBs: 85/175 * 65535 = 31831 -> 248; RH's 7 MSBs: 0.7 * 65535 -> 89.
        assert word & 0x1FF == int(85 / 175 * 0xFFFF) >> 7
        assert word >> 9 == int(0.7 * 0xFFFF) >> 9
        assert read_int(hwmon / f"temp1_{attr}") == 40_000
        assert read_int(hwmon / f"humidity1_{attr}") == 70_000


def test_limits_clamp(guest: RoadtestSession) -> None:
    with guest.bound(SENSOR) as dev:
        hwmon = hwmon_of(dev.path)
        write_int(hwmon / "temp1_max", 200_000)  # the sensor's range ends at 130 degC
        write_int(hwmon / "humidity1_max", 150_000)
        assert read_int(hwmon / "temp1_max") == 130_000
        assert read_int(hwmon / "humidity1_max") == 100_000


def test_limits_at_the_top_of_the_range(guest: RoadtestSession) -> None:
    with guest.bound(SENSOR) as dev:
        hwmon = hwmon_of(dev.path)
        write_int(hwmon / "temp1_max", 130_000)
        write_int(hwmon / "humidity1_max", 100_000)
        # 130 degC is ST = 0xFFFF, 100 %RH is SRH = 0xFFFF (section 4.13): all ones in
        # both fields of the reduced format.
        assert dev.model.limits["high_set"] == 0xFFFF


def test_alarms(guest: RoadtestSession) -> None:
    with guest.bound(SENSOR) as dev:
        hwmon = hwmon_of(dev.path)
        assert read_int(hwmon / "temp1_alarm") == 0
        assert read_int(hwmon / "humidity1_alarm") == 0
        # Alert mode runs in periodic acquisition (alert note, section 1).
        dev.model.temperature, dev.model.humidity = 70, 90  # above 60 degC, 80 %RH
        write_int(hwmon / "update_interval", 100)
        guest.sleep(0.15)
        assert read_int(hwmon / "temp1_alarm") == 1  # status bit 10 (Table 18)
        assert read_int(hwmon / "humidity1_alarm") == 1  # status bit 11
        dev.model.temperature, dev.model.humidity = 25, 50  # between the clear limits
        guest.sleep(0.15)
        assert read_int(hwmon / "temp1_alarm") == 0
        assert read_int(hwmon / "humidity1_alarm") == 0


class CorruptCRC(SHT3x):
    """An SHT3x whose measurements arrive with the temperature word's CRC wrong, as a
    disturbed bus delivers them."""

    def measurement(self) -> bytes:
        data = bytearray(super().measurement())
        data[2] ^= 0xFF
        return bytes(data)


def test_a_measurement_with_a_wrong_crc_is_an_error(guest: RoadtestSession) -> None:
    """Section 4.12: every word read is followed by its CRC-8 so that the master can check
    it; a word whose CRC is wrong is an I/O error, not a reading (without
    kernel-patches/hwmon/0007 the driver ignored the CRC)."""
    with guest.bound(SENSOR, CorruptCRC()) as dev:
        with pytest.raises(OSError) as info:
            read_int(hwmon_of(dev.path) / "temp1_input")
        assert info.value.errno == errno.EIO


def test_unbind(guest: RoadtestSession) -> None:
    with guest.bound(SENSOR) as dev:
        hwmon = hwmon_of(dev.path)
        assert hwmon.exists()
        sent = len(dev.model.commands)
    assert not hwmon.exists()
    assert len(dev.model.commands) == sent  # nothing sent at unbind
