"""NXP PCF2123 SPI real-time clock (drivers/rtc/rtc-pcf2123.c), through /dev/rtcN and the
RTC class's sysfs, against the datasheet (PCF2123 Rev. 6; roadtest/models/pcf2123.py).

The chip sits on SPI with its chip enable active high (`spi-cs-high`, as the binding's
example has it); the model refuses any other chip-select polarity, so every message below
was framed as the datasheet's SPI section says: a command byte R/W | SA=001 | RA, then the
registers from RA on.
"""

from __future__ import annotations

import datetime
import errno

import pytest

from roadtest.models.pcf2123 import (
    AE,
    CTRL1_STOP,
    CTRL2_AF,
    CTRL2_AIE,
    OS,
    PCF2123,
    REG_CONTROL_1,
    REG_CONTROL_2,
    REG_DAY_ALARM,
    REG_DAYS,
    REG_HOUR_ALARM,
    REG_HOURS,
    REG_MINUTE_ALARM,
    REG_MINUTES,
    REG_MONTHS,
    REG_OFFSET,
    REG_SECONDS,
    REG_WEEKDAY_ALARM,
    REG_WEEKDAYS,
    REG_YEARS,
    SOFTWARE_RESET,
    offset_ppm,
)
from roadtest.testing import RoadtestSession, SPIDevice, read_int, wait_until, write_int
from roadtest.testing.rtc import RTC, RTC_AF, RTC_IRQF

RTC_NO_IRQ = SPIDevice(
    compatible="nxp,pcf2123",
    model=PCF2123,
    dts="""
        rtc@$addr$ {
            compatible = "nxp,pcf2123";
            reg = <$addr$>;
            spi-cs-high;
            spi-max-frequency = <1000000>;
        };
    """,
)

# INT is open-drain, active low; with a devicetree the driver takes the trigger from it.
RTC_IRQ = SPIDevice(
    compatible="nxp,pcf2123",
    model=PCF2123,
    gpios=("irq",),
    dts="""
        rtc@$addr$ {
            compatible = "nxp,pcf2123";
            reg = <$addr$>;
            spi-cs-high;
            spi-max-frequency = <1000000>;
            interrupt-parent = <&gpio>;
            interrupts = <$irq$ IRQ_TYPE_LEVEL_LOW>;
        };
    """,
)

CHRISTMAS = datetime.datetime(2021, 12, 25, 11, 10, 37)  # a Saturday
SATURDAY = 6
TIME_REGS = (REG_SECONDS, REG_MINUTES, REG_HOURS, REG_DAYS, REG_WEEKDAYS, REG_MONTHS, REG_YEARS)


def set_time(rtc: RTC, model: PCF2123, when: datetime.datetime) -> None:
    """RTC_SET_TIME, then wait for the RTC core's own read of the time after it (its
    irqwork), so that it cannot race the test's next access (and a golden trace is the
    same from run to run)."""
    reads = model.reads
    rtc.set_time(when)
    wait_until(lambda: model.reads > reads, "the RTC core's read after setting the time")


def test_oscillator_stopped_at_power_on(guest: RoadtestSession) -> None:
    """OS is set at power-on ("clock integrity is not guaranteed"): the time is invalid."""
    with guest.bound(RTC_NO_IRQ) as dev, RTC(dev.path) as rtc:
        with pytest.raises(OSError) as info:
            rtc.read_time()
        assert info.value.errno == errno.EINVAL
        model = dev.model
        assert model.oscillator_stopped
        # The probe found the time invalid and reset the chip: the software reset command
        # (58h), then STOP, then the clock running again.
        assert model.reg_writes(REG_CONTROL_1) == [SOFTWARE_RESET, CTRL1_STOP, 0x00]
        assert [model.reg_writes(reg) for reg in TIME_REGS] == [[]] * len(TIME_REGS)


def test_read_time_bcd(guest: RoadtestSession) -> None:
    model = PCF2123()
    model.set_time(CHRISTMAS)
    with guest.bound(RTC_NO_IRQ, model) as dev, RTC(dev.path) as rtc:
        tm = rtc.read_rtc_time()
        assert tm.to_datetime() == CHRISTMAS
        assert tm.tm_wday == SATURDAY  # from the Weekdays register
        # A valid clock is left alone at probe: no reset, no writes at all.
        assert model.all_reg_writes() == []


def test_set_time(guest: RoadtestSession) -> None:
    with guest.bound(RTC_NO_IRQ) as dev, RTC(dev.path) as rtc:
        model = dev.model
        model.reset_reg_writes()
        set_time(rtc, model, CHRISTMAS)
        # BCD per the datasheet's registers; Seconds written with OS = 0, which clears it.
        writes = [(r, v) for r, v in model.all_reg_writes() if r in TIME_REGS]
        assert writes == [
            (REG_SECONDS, 0x37),
            (REG_MINUTES, 0x10),
            (REG_HOURS, 0x11),
            (REG_DAYS, 0x25),
            (REG_WEEKDAYS, SATURDAY),
            (REG_MONTHS, 0x12),
            (REG_YEARS, 0x21),
        ]
        assert not model.register(REG_SECONDS) & OS
        # The clock was stopped while it was set, and runs again.
        assert model.reg_writes(REG_CONTROL_1) == [CTRL1_STOP, 0x00]
        assert rtc.read_time() == CHRISTMAS
        model.advance(3600 * 24 * 7)
        assert rtc.read_time() == CHRISTMAS + datetime.timedelta(days=7)


def test_time_invalid_once_the_oscillator_stopped(guest: RoadtestSession) -> None:
    model = PCF2123()
    model.set_time(CHRISTMAS)
    with guest.bound(RTC_NO_IRQ, model) as dev, RTC(dev.path) as rtc:
        assert rtc.read_time() == CHRISTMAS
        model.regs[REG_SECONDS] |= OS  # the supply dropped below what the oscillator needs
        with pytest.raises(OSError) as info:
            rtc.read_time()
        assert info.value.errno == errno.EINVAL
        guest.assert_kernel_log(r"clock was stopped\. Time is not valid")


def test_alarm(guest: RoadtestSession) -> None:
    start = datetime.datetime(2021, 1, 1, 1, 1, 10)  # a Friday
    alarm = datetime.datetime(2021, 1, 1, 1, 2, 0)
    with guest.bound(RTC_IRQ) as dev, RTC(dev.path) as rtc:
        model = dev.model
        line = dev.lines["irq"]
        assert model.irq is not None and model.irq.input  # INT idle: released, high
        set_time(rtc, model, start)
        rtc.set_wake_alarm(alarm, enabled=True)
        # Minute, hour and day compared (AE = 0), in BCD; the alarm interrupt on.
        assert model.register(REG_MINUTE_ALARM) == 0x02
        assert model.register(REG_HOUR_ALARM) == 0x01
        assert model.register(REG_DAY_ALARM) == 0x01
        assert model.register(REG_WEEKDAY_ALARM) & AE  # the weekday is not compared
        assert model.register(REG_CONTROL_2) & CTRL2_AIE
        wake = rtc.read_wake_alarm()
        assert (wake.enabled, wake.pending) == (True, False)
        assert (wake.time.tm_hour, wake.time.tm_min) == (1, 2)

        fired = line.interrupts
        model.advance(49)  # 01:01:59: not yet
        assert not model.alarm_flag and model.irq.input
        model.advance(1)  # 01:02:00: AF, and INT pulled low
        data = rtc.read_irq()
        assert data & 0xFF == RTC_IRQF | RTC_AF
        assert data >> 8 == 1
        assert line.interrupts == fired + 1
        # The handler cleared AF (written 0), which released INT.
        wait_until(
            lambda: not model.alarm_flag and model.irq is not None and model.irq.input,
            "the driver clearing AF",
        )
        wait_until(lambda: line.armed, "the driver's interrupt handler returning")
        rtc.alarm_irq(False)
        assert not model.register(REG_CONTROL_2) & (CTRL2_AIE | CTRL2_AF)


@pytest.mark.parametrize("register", [0x00, 0x01, 0x3F, 0x7F, 0x40, 0x81, 0xBF, 0xC0])
def test_read_offset(guest: RoadtestSession, register: int) -> None:
    """The offset attribute is in parts per billion (Documentation/ABI/testing/
    sysfs-class-rtc); the register's meaning is the datasheet's Table 36."""
    model = PCF2123()
    model.set_time(CHRISTMAS)
    model.regs[REG_OFFSET] = register
    with guest.bound(RTC_NO_IRQ, model) as dev:
        rtc_dir = (dev.path / "rtc").only("rtc*")
        assert read_int(rtc_dir / "offset") == round(offset_ppm(register) * 1000)


@pytest.mark.parametrize("ppb", [0, 2170, -2170, 4340, 136710, -138880, 273420, -277760])
def test_set_offset(guest: RoadtestSession, ppb: int) -> None:
    """An offset the chip can hold exactly is written as a register value that means it
    (Table 36: normal or course mode, whichever the driver picks)."""
    model = PCF2123()
    model.set_time(CHRISTMAS)
    with guest.bound(RTC_NO_IRQ, model) as dev:
        rtc_dir = (dev.path / "rtc").only("rtc*")
        write_int(rtc_dir / "offset", ppb)
        written = model.get_last_reg_write(REG_OFFSET)
        assert round(offset_ppm(written) * 1000) == ppb
        assert read_int(rtc_dir / "offset") == ppb


def test_unbind(guest: RoadtestSession) -> None:
    model = PCF2123()
    model.set_time(CHRISTMAS)
    with guest.bound(RTC_NO_IRQ, model) as dev:
        rtc_name = (dev.path / "rtc").only("rtc*").name
        assert guest.path(f"/sys/class/rtc/{rtc_name}").exists()
        model.reset_reg_writes()
    assert not guest.path(f"/sys/class/rtc/{rtc_name}").exists()
    assert not guest.path(f"/dev/{rtc_name}").exists()
    # Unbinding leaves the clock alone: running, its time as it was.
    assert model.all_reg_writes() == []
    assert model.time == CHRISTMAS
