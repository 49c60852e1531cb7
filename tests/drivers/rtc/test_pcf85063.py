"""PCF85063A / PCF85063TP / RV-8263 real-time clocks (drivers/rtc/rtc-pcf85063.c), against
NXP's datasheets (PCF85063A Rev. 7, PCF85063TP Rev. 4), through /dev/rtcN, the RTC class's
sysfs `offset` (Documentation/ABI/testing/sysfs-class-rtc: parts per billion) and the
nvmem device of the RAM byte.

Not reached: the CLKOUT clock (COF in Control_2). The driver registers it with the common
clock framework only under CONFIG_COMMON_CLK, which the shared guest kernel leaves out
(see pcf85063.config); the model's COF table is checked in
tests/unit/test_models_pcf85063.py. NACKed transfers are tested in
tests/guest/test_pcf85063_bus_errors.py: a script of failed transfers is not a golden
trace's I/O, and tests/drivers is replayed against its traces.
"""

from __future__ import annotations

import datetime
import errno

import pytest

from roadtest.models.pcf85063 import (
    AEN,
    CTRL1_CAP_SEL,
    CTRL1_STOP,
    CTRL2_AF,
    CTRL2_AIE,
    OFFSET_PPM,
    PCF85063,
    PCF85063A,
    PCF85063TP,
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
    REG_RAM_BYTE,
    REG_SECOND_ALARM,
    REG_SECONDS,
    REG_WEEKDAY_ALARM,
    REG_WEEKDAYS,
    REG_YEARS,
    SOFTWARE_RESET,
)
from roadtest.testing import I2CDevice, RoadtestSession, only_nvmem, wait_until
from roadtest.testing.rtc import (
    RTC,
    RTC_AF,
    RTC_FEATURE_ALARM,
    RTC_FEATURE_CORRECTION,
    RTC_FEATURE_UPDATE_INTERRUPT,
    RTC_IRQF,
    RTC_VL_DATA_INVALID,
)


def rtc_node(compatible: str, extra: str = "") -> str:
    return f"""
        rtc@$addr$ {{
            compatible = "{compatible}";
            reg = <0x$addr$>;{extra}
        }};
    """


# INT is open-drain, active low (PCF85063A Rev. 7, pin description); with a devicetree
# the driver takes the trigger from it (irqflags 0), so the node says level-low.
RTC_IRQ = I2CDevice(
    compatible="nxp,pcf85063a",
    model=PCF85063A,
    gpios=("irq",),
    dts=rtc_node(
        "nxp,pcf85063a",
        """
            interrupt-parent = <&gpio>;
            interrupts = <$irq$ IRQ_TYPE_LEVEL_LOW>;""",
    ),
)
RTC_NO_IRQ = I2CDevice(compatible="nxp,pcf85063a", model=PCF85063A, dts=rtc_node("nxp,pcf85063a"))
# Documentation/devicetree/bindings/rtc/nxp,pcf85063.yaml: quartz-load-femtofarads is
# 7000 or 12500, the two loads CAP_SEL selects (7 pF, 12.5 pF).
RTC_12PF = I2CDevice(
    compatible="nxp,pcf85063a",
    model=PCF85063A,
    dts=rtc_node("nxp,pcf85063a", "\n            quartz-load-femtofarads = <12500>;"),
)
RTC_ODD_LOAD = I2CDevice(
    compatible="nxp,pcf85063a",
    model=PCF85063A,
    dts=rtc_node("nxp,pcf85063a", "\n            quartz-load-femtofarads = <9000>;"),
)
# The RV-8263-C7 has the PCF85063A's registers around a quartz of its own (7 pF load,
# Micro Crystal's application manual): the binding allows no other load for it.
RV8263 = I2CDevice(
    compatible="microcrystal,rv8263",
    model=PCF85063A,
    dts=rtc_node("microcrystal,rv8263", "\n            quartz-load-femtofarads = <12500>;"),
)
RTC_TP = I2CDevice(compatible="nxp,pcf85063tp", model=PCF85063TP, dts=rtc_node("nxp,pcf85063tp"))

CHRISTMAS = datetime.datetime(2021, 12, 25, 11, 10, 37)  # a Saturday
SATURDAY = 6
TIME_REGS = (REG_SECONDS, REG_MINUTES, REG_HOURS, REG_DAYS, REG_WEEKDAYS, REG_MONTHS, REG_YEARS)


def valid_clock(model: PCF85063, when: datetime.datetime = CHRISTMAS) -> PCF85063:
    model.set_time(when)
    return model


def set_time(rtc: RTC, model: PCF85063, when: datetime.datetime) -> None:
    """RTC_SET_TIME, then wait for the read of the time the RTC core makes after it on a
    workqueue (rtc_set_time schedules irqwork, whose rtc_timer_do_work reads the time):
    without the wait that read races the test's next access, and the I/O sequence would
    differ from run to run. A read of the time, not any read: the driver's set_time reads
    Control_1 itself (regmap_update_bits), and on x86_64, whose guest runs beside the test
    on a real clock, a wait for any read let the workqueue's read come after the test's
    next access (an alarm's trace diverged)."""
    reads = model.time_reads
    rtc.set_time(when)
    wait_until(lambda: model.time_reads > reads, "the RTC core's read of the time after setting it")


def assert_time_written(model: PCF85063) -> None:
    """Each time register written once, 2021-12-25 11:10:37 in BCD, OS cleared (bit 7 of
    Seconds written 0), the weekday 6 (Saturday), between STOP set and STOP cleared (the
    datasheet's way to set the time: the divider chain held while it is written)."""
    model.assert_reg_write_once(REG_SECONDS, 0x37)
    model.assert_reg_write_once(REG_MINUTES, 0x10)
    model.assert_reg_write_once(REG_HOURS, 0x11)
    model.assert_reg_write_once(REG_DAYS, 0x25)
    model.assert_reg_write_once(REG_WEEKDAYS, SATURDAY)
    model.assert_reg_write_once(REG_MONTHS, 0x12)
    model.assert_reg_write_once(REG_YEARS, 0x21)
    writes = model.all_reg_writes()
    first_time = writes.index((REG_SECONDS, 0x37))
    stops = [i for i, (reg, val) in enumerate(writes) if reg == REG_CONTROL_1]
    assert writes[stops[-2]][1] & CTRL1_STOP and stops[-2] < first_time
    assert not writes[stops[-1]][1] & CTRL1_STOP and stops[-1] > first_time + 6
    assert not model.register(REG_CONTROL_1) & CTRL1_STOP


# Probe


def test_power_on_reset_and_invalid_time(guest: RoadtestSession) -> None:
    """At power-on OS is set: the driver sends the software reset command (58h to
    Control_1), reports the data invalid (RTC_VL_READ) and refuses the time (EINVAL)."""
    with guest.bound(RTC_NO_IRQ) as dev, RTC(dev.path) as rtc:
        model = dev.model
        assert model.reg_writes(REG_CONTROL_1) == [SOFTWARE_RESET]
        assert model.software_resets == 1
        assert rtc.vl_read() == RTC_VL_DATA_INVALID
        with pytest.raises(OSError) as info:
            rtc.read_time()
        assert info.value.errno == errno.EINVAL
        assert [model.reg_writes(reg) for reg in TIME_REGS] == [[]] * len(TIME_REGS)


def test_valid_clock_is_left_alone(guest: RoadtestSession) -> None:
    model = valid_clock(PCF85063A())
    with guest.bound(RTC_NO_IRQ, model) as dev, RTC(dev.path) as rtc:
        assert rtc.vl_read() == 0
        tm = rtc.read_rtc_time()
        assert tm.to_datetime() == CHRISTMAS
        assert tm.tm_wday == SATURDAY  # the Weekdays register
        assert model.software_resets == 0
        assert model.all_reg_writes() == []  # 7 pF: CAP_SEL already 0


@pytest.mark.parametrize(
    ("device", "cap_sel"),
    [(RTC_NO_IRQ, 0), (RTC_12PF, CTRL1_CAP_SEL), (RTC_ODD_LOAD, 0), (RV8263, 0)],
    ids=["default-7pF", "12.5pF", "9000fF-unknown", "rv8263-forced-7pF"],
)
def test_quartz_load(guest: RoadtestSession, device: I2CDevice[PCF85063A], cap_sel: int) -> None:
    """quartz-load-femtofarads reaches CAP_SEL: 12500 sets it (12.5 pF); no property, or
    a value the chip does not offer, leaves 7 pF; the RV-8263 is always 7 pF."""
    model = valid_clock(PCF85063A())
    model.regs[REG_CONTROL_1] = CTRL1_CAP_SEL ^ cap_sel  # the other load: it must change
    with guest.bound(device, model):
        assert model.reg_writes(REG_CONTROL_1) == [cap_sel]
        assert model.load_capacitance_pf == (12.5 if cap_sel else 7.0)
        if device is RTC_ODD_LOAD:
            guest.assert_kernel_log(r"Unknown quartz-load-femtofarads value: 9000")


# Time


def test_set_time_from_invalid(guest: RoadtestSession) -> None:
    with guest.bound(RTC_NO_IRQ) as dev, RTC(dev.path) as rtc:
        set_time(rtc, dev.model, CHRISTMAS)
        assert_time_written(dev.model)
        assert rtc.read_time() == CHRISTMAS
        assert rtc.vl_read() == 0


def test_oscillator_stop_invalidates_until_set(guest: RoadtestSession) -> None:
    """OS set while running (the oscillator stopped): EINVAL and RTC_VL_DATA_INVALID until
    a new time is set, which clears OS."""
    model = valid_clock(PCF85063A())
    with guest.bound(RTC_NO_IRQ, model) as dev, RTC(dev.path) as rtc:
        assert rtc.read_time() == CHRISTMAS
        model.oscillator_stopped = True
        assert rtc.vl_read() == RTC_VL_DATA_INVALID
        with pytest.raises(OSError) as info:
            rtc.read_time()
        assert info.value.errno == errno.EINVAL
        set_time(rtc, model, CHRISTMAS)
        assert not model.oscillator_stopped
        assert rtc.read_time() == CHRISTMAS
        assert rtc.vl_read() == 0


def test_twelve_hour_mode_reads_right(guest: RoadtestSession) -> None:
    """A clock left in 12-hour mode (Control_1 12_24 set; Hours AMPM in bit 5, 01-12:
    PCF85063A Rev. 7) reads right: 13:10 is Hours 0x21, not 21:10. The probe moves it to
    24-hour mode (without kernel-patches/rtc/0004 it did not, nor decode AMPM)."""
    model = PCF85063A()
    model.set_time(datetime.datetime(2021, 12, 25, 13, 10, 37), twelve_hour=True)
    with guest.bound(RTC_NO_IRQ, model) as dev, RTC(dev.path) as rtc:
        assert rtc.read_time() == datetime.datetime(2021, 12, 25, 13, 10, 37)
        assert not model.twelve_hour
        assert model.time == datetime.datetime(2021, 12, 25, 13, 10, 37)


def test_a_digit_above_nine_is_an_error(guest: RoadtestSession) -> None:
    """PCF85063A Rev. 7: the time registers are "coded in BCD format"; Seconds 0x0a is no
    time, and the read fails (without kernel-patches/rtc/0003 it read as second 10)."""
    model = valid_clock(PCF85063A())
    model.regs[REG_SECONDS] = 0x0A
    with guest.bound(RTC_NO_IRQ, model) as dev, RTC(dev.path) as rtc:
        with pytest.raises(OSError) as info:
            rtc.read_time()
        assert info.value.errno == errno.EINVAL


# Alarm


def test_features(guest: RoadtestSession) -> None:
    """RTC_PARAM_GET: with an interrupt the alarm is offered, and the offset always; no
    update interrupt. (RTC_FEATURE_ALARM_RES_2S, which the driver also sets, is not
    checked: the PCF85063A has a seconds alarm, and the flag means nothing to the core.)"""
    with guest.bound(RTC_IRQ) as dev, RTC(dev.path) as rtc:
        features = rtc.features()
        assert {RTC_FEATURE_ALARM, RTC_FEATURE_CORRECTION} <= features
        assert RTC_FEATURE_UPDATE_INTERRUPT not in features
    with guest.bound(RTC_NO_IRQ) as dev, RTC(dev.path) as rtc:
        assert RTC_FEATURE_ALARM not in rtc.features()


def test_alarm_needs_an_interrupt(guest: RoadtestSession) -> None:
    model = valid_clock(PCF85063A())
    with guest.bound(RTC_NO_IRQ, model) as dev, RTC(dev.path) as rtc:
        with pytest.raises(OSError) as info:
            rtc.set_wake_alarm(CHRISTMAS + datetime.timedelta(minutes=2))
        assert info.value.errno == errno.EINVAL
        alarm_regs = (REG_SECOND_ALARM, REG_MINUTE_ALARM, REG_HOUR_ALARM, REG_DAY_ALARM)
        assert [model.reg_writes(reg) for reg in alarm_regs] == [[]] * 4
        assert not model.register(REG_CONTROL_2) & CTRL2_AIE


def test_alarm(guest: RoadtestSession) -> None:
    start = datetime.datetime(2021, 1, 1, 1, 1, 10)  # a Friday
    alarm = datetime.datetime(2021, 1, 1, 1, 2, 0)
    with guest.bound(RTC_IRQ) as dev, RTC(dev.path) as rtc:
        model = dev.model
        line = dev.lines["irq"]
        assert model.irq is not None and model.irq.input  # INT idle: high
        set_time(rtc, model, start)
        rtc.set_wake_alarm(alarm, enabled=True)

        # Second, minute, hour and day compared (AEN_x = 0), in BCD; not the weekday.
        model.assert_last_reg_write(REG_SECOND_ALARM, 0x00)
        model.assert_last_reg_write(REG_MINUTE_ALARM, 0x02)
        model.assert_last_reg_write(REG_HOUR_ALARM, 0x01)
        model.assert_last_reg_write(REG_DAY_ALARM, 0x01)
        assert model.register(REG_WEEKDAY_ALARM) & AEN
        # AIE on; AF written 1, which leaves it as it is (cleared just before).
        assert model.register(REG_CONTROL_2) & (CTRL2_AIE | CTRL2_AF) == CTRL2_AIE
        wake = rtc.read_wake_alarm()
        assert (wake.enabled, wake.pending) == (True, False)
        assert wake.time.to_datetime() == alarm

        # Only the clock sets AF, and only AF with AIE pulls INT low.
        fired = line.interrupts
        model.advance(49)  # 01:01:59: not yet
        assert not model.alarm_flag and model.irq.input
        # 01:02:00: AF, and INT goes low. Not asserted here: where the guest runs beside
        # the test its handler may already have read and cleared AF, releasing INT.
        model.advance(1)

        data = rtc.read_irq()
        assert data & 0xFF == RTC_IRQF | RTC_AF  # the handler found AF set
        assert data >> 8 == 1  # one interrupt
        assert line.interrupts == fired + 1

        # The handler cleared AF (and AIE) by writing 0, which releases INT, and returned.
        wait_until(
            lambda: not model.alarm_flag and model.irq is not None and model.irq.input,
            "the driver clearing AF",
        )
        wait_until(lambda: line.armed, "the driver's interrupt handler returning")
        rtc.alarm_irq(False)
        assert not model.register(REG_CONTROL_2) & (CTRL2_AIE | CTRL2_AF)
        assert model.irq.input
        assert line.interrupts == fired + 1


# Offset


def closest_registers(ppb: int) -> set[int]:
    """The Offset register values whose correction is nearest `ppb`: OFFSET -64..63 at
    4.34 ppm (MODE 0) or 4.069 ppm (MODE 1) a step (PCF85063TP Rev. 4 Table 13)."""
    candidates = {
        (mode << 7) | (steps & 0x7F): abs(ppb - steps * round(OFFSET_PPM[mode] * 1000))
        for mode in (0, 1)
        for steps in range(-64, 64)
    }
    best = min(candidates.values())
    return {reg for reg, error in candidates.items() if error == best}


def offset_ppb(register: int) -> int:
    steps = (register & 0x3F) - (register & 0x40)
    return steps * round(OFFSET_PPM[register >> 7] * 1000)


@pytest.mark.parametrize(
    "ppb", [4340, 4069, 8000, 100_000, -100_000, 273_420, 256_347, -260_416, -277_760, 0]
)
def test_offset_is_the_nearest_step(guest: RoadtestSession, ppb: int) -> None:
    """Writing `offset` (ppb) programs the nearest correction the register has, in either
    mode; reading gives that correction back, as does RTC_PARAM_GET's."""
    model = valid_clock(PCF85063A())
    with guest.bound(RTC_NO_IRQ, model) as dev, RTC(dev.path) as rtc:
        rtc.write_offset(ppb)
        written = model.get_last_reg_write(REG_OFFSET)
        assert written in closest_registers(ppb)
        assert rtc.read_offset() == offset_ppb(written)
        assert rtc.correction() == offset_ppb(written)


@pytest.mark.parametrize("register", [0x01, 0x3F, 0x40, 0x7F, 0x81, 0xBF, 0xC0, 0xFF])
def test_offset_read(guest: RoadtestSession, register: int) -> None:
    model = valid_clock(PCF85063A())
    model.regs[REG_OFFSET] = register
    with guest.bound(RTC_NO_IRQ, model) as dev:
        assert RTC(dev.path).read_offset() == offset_ppb(register)


@pytest.mark.parametrize("ppb", [300_000, -300_000])
def test_offset_out_of_range(guest: RoadtestSession, ppb: int) -> None:
    """Past +273.42 / -277.76 ppm, the register's ends, by more than half a step: ERANGE
    (rtc_set_offset's error for an offset the hardware cannot do)."""
    with guest.bound(RTC_NO_IRQ) as dev:
        with pytest.raises(OSError) as info:
            RTC(dev.path).write_offset(ppb)
        assert info.value.errno == errno.ERANGE
        assert dev.model.reg_writes(REG_OFFSET) == []


# RAM byte


def test_ram_byte_through_nvmem(guest: RoadtestSession) -> None:
    model = valid_clock(PCF85063A())
    model.regs[REG_RAM_BYTE] = 0x5A
    with guest.bound(RTC_NO_IRQ, model) as dev:
        nvmem = only_nvmem(dev.path)
        assert nvmem.type == "Battery backed"
        assert nvmem.read() == b"\x5a"  # one byte: RAM_byte (03h)
        nvmem.write(b"\xa5")
        model.assert_reg_write_once(REG_RAM_BYTE, 0xA5)
        assert nvmem.read() == b"\xa5"


# PCF85063TP


def test_tp(guest: RoadtestSession) -> None:
    """The PCF85063TP: time, offset and RAM byte as the A's, but no alarm (no INT pin, no
    alarm registers: the driver must not reach past 0Ah, which the model refuses)."""
    model = valid_clock(PCF85063TP())
    with guest.bound(RTC_TP, model) as dev, RTC(dev.path) as rtc:
        assert rtc.read_time() == CHRISTMAS
        features = rtc.features()
        assert RTC_FEATURE_ALARM not in features and RTC_FEATURE_CORRECTION in features
        with pytest.raises(OSError) as info:
            rtc.set_wake_alarm(CHRISTMAS + datetime.timedelta(minutes=2))
        assert info.value.errno == errno.EINVAL
        rtc.write_offset(-4340)
        model.assert_reg_write_once(REG_OFFSET, 0x7F)
        only_nvmem(dev.path).write(b"\x42")
        assert model.ram == 0x42
        set_time(rtc, model, datetime.datetime(2024, 2, 29, 12, 0, 0))
        assert model.time == datetime.datetime(2024, 2, 29, 12, 0, 0)


# Unbind


def test_unbind(guest: RoadtestSession) -> None:
    """Unbinding removes the RTC and its nvmem device, and leaves the chip as it was: the
    driver has no remove work (the clock keeps running on its own)."""
    model = valid_clock(PCF85063A())
    with guest.bound(RTC_IRQ, model) as dev:
        rtc_dir = RTC(dev.path).sysfs
        nvmem = only_nvmem(dev.path)
        writes = len(model.all_reg_writes())
    assert not rtc_dir.exists()
    assert not nvmem.path.exists()
    assert guest.path(f"/dev/{rtc_dir.name}").exists() is False
    assert len(model.all_reg_writes()) == writes
    assert model.time == CHRISTMAS
