"""DS1307 family (drivers/rtc/rtc-ds1307.c): one driver, one model with per-chip
parameters (roadtest.models.ds1307), one file of tests parametrised over the chips
(DS1307, DS1337, DS1338, DS1340, M41T00).

Expected values come from the Maxim datasheets (cited in the model) and the RTC ABI:
RTC_RD_TIME fails with EINVAL while the time is not valid (Documentation/ABI/
testing/rtc-cdev: "EINVAL ... if the time is invalid"), the nvmem file is the chip's
RAM byte for byte, and RTC_PARAM_GET's features say whether there is an alarm.

What the driver chooses where the datasheets leave it open: the day-of-week register is
"user-defined but must be sequential"; the driver counts Sunday as 1 (tm_wday + 1), so
the tests check the day round-trips through RTC_SET_TIME / RTC_RD_TIME and not a
particular number. On the DS1340 it sets CEB (the century enable) with every time it
writes; without CONFIG_RTC_DRV_DS1307_CENTURY it never sets a century bit and reads
years 00-99 as 2000-2099.

The driver exposes no clock output (square wave) for these chips: its common clock
provider is the DS3231's. The M41T00's FT bit is its frequency_test attribute (the
DS1340 has the same bit, which the driver leaves alone).
"""

from __future__ import annotations

import datetime
import errno
from dataclasses import dataclass

import pytest

from roadtest.fuzz.events import Pass, TransferFails
from roadtest.models.ds1307 import (
    A1F,
    A1IE,
    A2IE,
    AM,
    CEB,
    CH,
    DS1307,
    DS1337,
    DS1338,
    DS1340,
    H12,
    INTCN,
    M41T00,
    NEOSC,
    REG_A1_DAY_DATE,
    REG_A1_HOURS,
    REG_A1_MINUTES,
    REG_A1_SECONDS,
    REG_CONTROL,
    REG_DS1337_CONTROL,
    REG_DS1337_STATUS,
    REG_HOURS,
    REG_SECONDS,
    REG_TRICKLE,
    TIME_REGS,
    DS1307Family,
)
from roadtest.testing import (
    BindError,
    I2CDevice,
    RoadtestSession,
    only_nvmem,
    read_int,
    read_str,
    wait_until,
    write_int,
)
from roadtest.testing.rtc import (
    RTC,
    RTC_AF,
    RTC_FEATURE_ALARM,
    RTC_IRQF,
)


def node(compatible: str, extra: str = "") -> str:
    return f"""
        rtc@$addr$ {{
            compatible = "{compatible}";
            reg = <0x$addr$>;
            {extra}
        }};
    """


DS1307_RTC: I2CDevice[DS1307Family] = I2CDevice(
    compatible="dallas,ds1307", model=DS1307, dts=node("dallas,ds1307")
)
DS1338_RTC: I2CDevice[DS1307Family] = I2CDevice(
    compatible="dallas,ds1338", model=DS1338, dts=node("dallas,ds1338")
)
DS1337_RTC: I2CDevice[DS1307Family] = I2CDevice(
    compatible="dallas,ds1337", model=DS1337, dts=node("dallas,ds1337")
)
DS1340_RTC: I2CDevice[DS1307Family] = I2CDevice(
    compatible="dallas,ds1340", model=DS1340, dts=node("dallas,ds1340")
)
M41T00_RTC: I2CDevice[DS1307Family] = I2CDevice(
    compatible="st,m41t00", model=M41T00, dts=node("st,m41t00")
)
# INTA is open drain, active low (DS1337 pin description): the node says level-low.
DS1337_IRQ = I2CDevice(
    compatible="dallas,ds1337",
    model=DS1337,
    gpios=("irq",),
    dts=node(
        "dallas,ds1337",
        "interrupt-parent = <&gpio>; interrupts = <$irq$ IRQ_TYPE_LEVEL_LOW>;",
    ),
)


def ds1340(extra: str) -> I2CDevice[DS1340]:
    return I2CDevice(compatible="dallas,ds1340", model=DS1340, dts=node("dallas,ds1340", extra))


# trickle-resistor-ohms and aux-voltage-chargeable: Documentation/devicetree/bindings/
# rtc/rtc.yaml and rtc-ds1307.yaml.
TRICKLE_250 = ds1340("trickle-resistor-ohms = <250>;")
TRICKLE_2K = ds1340("trickle-resistor-ohms = <2000>;")
TRICKLE_4K = ds1340("trickle-resistor-ohms = <4000>;")
TRICKLE_1K = ds1340("trickle-resistor-ohms = <1000>;")
NOT_CHARGEABLE = ds1340("trickle-resistor-ohms = <2000>; aux-voltage-chargeable = <0>;")


@dataclass(frozen=True)
class Case:
    """One chip of the family and what its datasheet gives it."""

    name: str
    device: I2CDevice[DS1307Family]
    twelve_hour: bool  # hours bit 6 selects 12-hour mode
    nvram: bool  # 56 bytes at 08h-3Fh
    stops: tuple[str, ...]  # how the chip says its time is not valid: CH, OSF


CASES = [
    Case("ds1307", DS1307_RTC, twelve_hour=True, nvram=True, stops=("CH",)),
    Case("ds1338", DS1338_RTC, twelve_hour=True, nvram=True, stops=("CH", "OSF")),
    Case("ds1337", DS1337_RTC, twelve_hour=True, nvram=False, stops=("OSF",)),
    Case("ds1340", DS1340_RTC, twelve_hour=False, nvram=False, stops=("OSF",)),
    Case("m41t00", M41T00_RTC, twelve_hour=False, nvram=False, stops=("CH",)),
]
chips = pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])

CHRISTMAS = datetime.datetime(2021, 12, 25, 11, 10, 37)  # a Saturday
SATURDAY = 6  # tm_wday


def set_time(rtc: RTC, model: DS1307Family, when: datetime.datetime) -> None:
    """RTC_SET_TIME, then wait for the read of the time the RTC core makes after it on a
    workqueue (rtc_set_time schedules irqwork), so that it does not race the test's next
    access. A read of the time, not any read: for several chips the driver's set_time
    reads a flag register itself (regmap_update_bits: DS1337's OSF, DS1340's OSF)."""
    reads = model.time_reads
    rtc.set_time(when)
    wait_until(lambda: model.time_reads > reads, "the RTC core's read of the time after setting it")


def stop(model: DS1307Family, how: str) -> None:
    """Make the chip say its time is not valid, as a power loss or another master would."""
    if how == "CH":  # the oscillator halted (DS1307/DS1338 CH, M41T00 ST)
        model.poke(REG_SECONDS, model.register(REG_SECONDS) | CH)
    else:  # the oscillator stopped at some time: OSF
        model.oscillator_stop_flag = True


def einval(rtc: RTC) -> None:
    with pytest.raises(OSError) as info:
        rtc.read_time()
    assert info.value.errno == errno.EINVAL


@chips
def test_power_on_time_is_invalid(guest: RoadtestSession, case: Case) -> None:
    """At power-on the DS1307/DS1338 have CH set, the DS1337/DS1338/DS1340 OSF (and the
    model's M41T00 ST): no time to report. The probe leaves the time registers alone."""
    with guest.bound(case.device) as dev, RTC(dev.path) as rtc:
        einval(rtc)
        model = dev.model
        assert [model.reg_writes(reg) for reg in TIME_REGS] == [[]] * len(TIME_REGS)


@chips
def test_set_time_from_power_on(guest: RoadtestSession, case: Case) -> None:
    """RTC_SET_TIME writes the time in BCD (and starts the DS1307's oscillator by
    clearing CH, clears OSF); RTC_RD_TIME then reads it back, the weekday too."""
    with guest.bound(case.device) as dev, RTC(dev.path) as rtc:
        model = dev.model
        set_time(rtc, model, CHRISTMAS)
        model.assert_reg_write_once(REG_SECONDS, 0x37)
        model.assert_reg_write_once(0x01, 0x10)
        assert model.get_last_reg_write(REG_HOURS) & 0x7F == 0x11  # 24-hour mode, 11
        model.assert_reg_write_once(0x04, 0x25)
        model.assert_reg_write_once(0x05, 0x12)
        model.assert_reg_write_once(0x06, 0x21)
        assert not model.halted
        if model.chip.osf is not None:
            assert not model.oscillator_stop_flag
        assert model.time == CHRISTMAS
        tm = rtc.read_rtc_time()
        assert tm.to_datetime() == CHRISTMAS
        assert tm.tm_wday == SATURDAY


@chips
def test_the_clock_runs(guest: RoadtestSession, case: Case) -> None:
    """A kept clock: the time the registers hold, and a minute and a second later."""
    model = case.device.model()
    model.set_time(datetime.datetime(2024, 2, 28, 23, 59, 30))
    with guest.bound(case.device, model) as dev, RTC(dev.path) as rtc:
        assert rtc.read_time() == datetime.datetime(2024, 2, 28, 23, 59, 30)
        model.advance(61)
        tm = rtc.read_rtc_time()
        assert tm.to_datetime() == datetime.datetime(2024, 2, 29, 0, 0, 31)
        assert tm.tm_wday == 4  # Thursday: the day register counted on at midnight


@pytest.mark.parametrize(
    ("case", "how"),
    [(c, how) for c in CASES for how in c.stops],
    ids=[f"{c.name}-{how}" for c in CASES for how in c.stops],
)
def test_stopped_oscillator_is_einval_until_set(
    guest: RoadtestSession, case: Case, how: str
) -> None:
    """CH set (the oscillator halted) or OSF set (it stopped at some time): the time is
    not valid, RTC_RD_TIME fails with EINVAL; setting the time makes it valid again."""
    model = case.device.model()
    model.set_time(CHRISTMAS)
    with guest.bound(case.device, model) as dev, RTC(dev.path) as rtc:
        assert rtc.read_time() == CHRISTMAS
        stop(model, how)
        einval(rtc)
        set_time(rtc, model, datetime.datetime(2022, 1, 1))
        assert not model.halted
        if model.chip.osf is not None:
            assert not model.oscillator_stop_flag
        assert rtc.read_time() == datetime.datetime(2022, 1, 1)


TWELVE = [
    datetime.datetime(2021, 12, 25, 0, 5, 0),  # 12 AM
    datetime.datetime(2021, 12, 25, 11, 5, 0),  # 11 AM
    datetime.datetime(2021, 12, 25, 12, 5, 0),  # 12 PM
    datetime.datetime(2021, 12, 25, 23, 5, 0),  # 11 PM
]
twelve_hour_chips = pytest.mark.parametrize(
    "case", [c for c in CASES if c.twelve_hour], ids=[c.name for c in CASES if c.twelve_hour]
)


@twelve_hour_chips
@pytest.mark.parametrize("when", TWELVE, ids=["12AM", "11AM", "12PM", "11PM"])
def test_twelve_hour_time_from_another_os(
    guest: RoadtestSession, case: Case, when: datetime.datetime
) -> None:
    """Another OS left the clock in 12-hour mode (hours bit 6; bit 5 PM; 12, 01-11): the
    time reads as it is, and the probe moves the clock to 24-hour mode with the same hour
    (bit 6 clear, 00-23)."""
    model = case.device.model()
    model.set_time(when, hour24=False)
    assert model.register(REG_HOURS) & H12
    with guest.bound(case.device, model) as dev, RTC(dev.path) as rtc:
        assert rtc.read_time() == when
        assert model.hour24 and model.time == when


@twelve_hour_chips
def test_twelve_hour_time_set_after_probe(guest: RoadtestSession, case: Case) -> None:
    """Another master (or OS, with this one suspended) sets the clock in 12-hour mode
    after the probe: the time still reads as it is (DS1307/DS1337/DS1338 "Clock and
    Calendar": bit 6 of the hours high selects 12-hour mode, bit 5 is PM; 11 PM is 71h,
    which without kernel-patches/rtc/0005 read as hour 31 and RTC_RD_TIME failed)."""
    model = case.device.model()
    model.set_time(CHRISTMAS)
    with guest.bound(case.device, model) as dev, RTC(dev.path) as rtc:
        assert rtc.read_time() == CHRISTMAS
        model.set_time(datetime.datetime(2021, 12, 25, 23, 5, 0), hour24=False)
        assert rtc.read_time() == datetime.datetime(2021, 12, 25, 23, 5, 0)


nvram_chips = pytest.mark.parametrize(
    "case", [c for c in CASES if c.nvram], ids=[c.name for c in CASES if c.nvram]
)


@nvram_chips
def test_nvram(guest: RoadtestSession, case: Case) -> None:
    """The 56 bytes of RAM at 08h-3Fh are the nvmem file, byte for byte, both ways; the
    clock's registers are not part of it."""
    model = case.device.model()
    model.set_time(CHRISTMAS)
    model.nvram = bytes(range(0xA0, 0xA0 + 56))
    with guest.bound(case.device, model) as dev:
        nvmem = only_nvmem(dev.path)
        assert nvmem.read() == bytes(range(0xA0, 0xA0 + 56))
        assert nvmem.read(54, 2) == bytes([0xA0 + 54, 0xA0 + 55])
        nvmem.write(b"roadtest")
        assert model.nvram[:8] == b"roadtest"
        assert model.nvram[8:] == bytes(range(0xA8, 0xA0 + 56))
        assert model.time == CHRISTMAS
        with RTC(dev.path) as rtc:
            assert rtc.read_time() == CHRISTMAS


@pytest.mark.parametrize(
    "case",
    [c for c in CASES if not c.nvram],
    ids=[c.name for c in CASES if not c.nvram],
)
def test_no_nvram(guest: RoadtestSession, case: Case) -> None:
    with guest.bound(case.device) as dev:
        assert not dev.path.glob("ds1307_nvram*")


@chips
def test_no_alarm_without_an_interrupt(guest: RoadtestSession, case: Case) -> None:
    """Without an interrupt line (and without wakeup-source) the RTC has no alarm
    feature (RTC_PARAM_GET), and RTC_WKALM_SET fails with EINVAL."""
    model = case.device.model()
    model.set_time(CHRISTMAS)
    with guest.bound(case.device, model) as dev, RTC(dev.path) as rtc:
        assert not rtc.has_feature(RTC_FEATURE_ALARM)
        with pytest.raises(OSError) as info:
            rtc.set_wake_alarm(CHRISTMAS + datetime.timedelta(minutes=5))
        assert info.value.errno == errno.EINVAL


@chips
def test_a_failed_probe_read_fails_the_bind(guest: RoadtestSession, case: Case) -> None:
    """The chip NACKs the probe's first transfer: the probe fails, no RTC is registered."""
    with guest.device_events([TransferFails(0)]):
        with pytest.raises(BindError), guest.bound(case.device):
            pass


@chips
def test_a_failed_read_is_an_error(guest: RoadtestSession, case: Case) -> None:
    """A NACK while reading the time: RTC_RD_TIME fails with the transfer's error (EIO
    from the I2C core), and the next read works."""
    model = case.device.model()
    model.set_time(CHRISTMAS)
    with guest.bound(case.device, model):
        probe = model.transfers  # what the probe and the RTC core's registration took
    model = case.device.model()
    model.set_time(CHRISTMAS)
    with guest.device_events([Pass(probe), TransferFails(1)]):
        with guest.bound(case.device, model) as dev, RTC(dev.path) as rtc:
            with pytest.raises(OSError) as info:
                rtc.read_time()
            assert info.value.errno == errno.EIO
            assert rtc.read_time() == CHRISTMAS


@chips
def test_unbind(guest: RoadtestSession, case: Case) -> None:
    dev = guest.attach(case.device)
    dev.bind()
    rtc_dir = (dev.path / "rtc").only("rtc*")
    node = f"/dev/{rtc_dir.name}"
    assert guest.agent.exists(node)
    dev.unbind()
    assert not rtc_dir.exists()
    assert not dev.path.glob("ds1307_nvram*")
    wait_until(lambda: not guest.agent.exists(node), f"{node} going with the device")


# DS1337: oscillator, alarms and INTA.


def test_ds1337_probe_starts_a_stopped_oscillator(guest: RoadtestSession) -> None:
    """/EOSC set (the oscillator stopped): the probe starts it (control 0Eh bit 7 = 0);
    OSF stays set, so the time is still not valid."""
    model = DS1337()
    model.set_time(CHRISTMAS)
    model.poke(REG_DS1337_CONTROL, model.register(REG_DS1337_CONTROL) | NEOSC)
    model.oscillator_stop_flag = True
    with guest.bound(DS1337_RTC, model) as dev, RTC(dev.path) as rtc:
        assert not model.register(REG_DS1337_CONTROL) & NEOSC
        assert not model.halted
        einval(rtc)
        guest.assert_kernel_log("SET TIME")


# The alarm tests start from a clock the chip kept (set before the probe), not from
# RTC_SET_TIME: that ioctl makes the RTC core read the time again later, on a workqueue
# (rtc_set_time's irqwork), and on x86_64's real clock that read landed among the
# alarm's own transfers, unlike the golden trace (a make test under load diverged there).
ALARM_START = datetime.datetime(2021, 1, 1, 1, 1, 50)


def kept_clock(when: datetime.datetime) -> DS1337:
    model = DS1337_IRQ.model()
    assert isinstance(model, DS1337)
    model.set_time(when)
    return model


def test_ds1337_alarm(guest: RoadtestSession) -> None:
    """RTC_WKALM_SET: alarm 1 at the time's seconds, minutes, hours and date with every
    mask bit 0 ("alarm when date, hours, minutes, and seconds match"), A1IE set, INTCN
    set at probe so that alarm 1 drives INTA. At that second the chip sets A1F and pulls
    INTA low; the driver reports RTC_AF through read() and clears A1F (a 0 written),
    which releases INTA."""
    alarm = datetime.datetime(2021, 1, 1, 1, 2, 5)
    with guest.bound(DS1337_IRQ, kept_clock(ALARM_START)) as dev, RTC(dev.path) as rtc:
        model = dev.model
        line = dev.lines["irq"]
        assert model.register(REG_DS1337_CONTROL) & INTCN
        assert model.irq is not None and model.irq.input  # INTA idle: released, high
        assert rtc.has_feature(RTC_FEATURE_ALARM)
        assert rtc.read_time() == ALARM_START
        rtc.set_wake_alarm(alarm, enabled=True)

        regs = [model.register(r) for r in (REG_A1_SECONDS, REG_A1_MINUTES, REG_A1_HOURS)]
        assert regs == [0x05, 0x02, 0x01]
        assert model.register(REG_A1_DAY_DATE) == 0x01  # A1M4 = 0, DY/DT = 0: date 1
        assert not any(model.register(r) & AM for r in range(REG_A1_SECONDS, REG_A1_DAY_DATE))
        assert model.register(REG_DS1337_CONTROL) & (A1IE | A2IE) == A1IE
        wake = rtc.read_wake_alarm()
        assert (wake.enabled, wake.pending) == (True, False)
        assert (wake.time.tm_hour, wake.time.tm_min, wake.time.tm_sec) == (1, 2, 5)
        assert wake.time.tm_mday == 1
        tm = rtc.read_alarm()  # RTC_ALM_READ: the same time
        assert (tm.tm_hour, tm.tm_min, tm.tm_sec) == (1, 2, 5)

        # Only the clock sets A1F: nothing the guest does makes INTA fall before 01:02:05.
        fired = line.interrupts
        model.advance(14)
        assert not model.alarm1_flag and model.irq.input
        model.advance(1)  # 01:02:05: A1F, INTA low (a handler beside us may clear it)

        data = rtc.read_irq()
        assert data & 0xFF == RTC_IRQF | RTC_AF
        assert data >> 8 == 1
        assert line.interrupts == fired + 1
        wait_until(
            lambda: (
                not model.register(REG_DS1337_STATUS) & A1F
                and model.irq is not None
                and model.irq.input
            ),
            "the driver clearing A1F",
        )
        wait_until(lambda: line.armed, "the driver's interrupt handler returning")
        assert not model.register(REG_DS1337_CONTROL) & A1IE  # the driver's one-shot
        assert not rtc.read_wake_alarm().enabled


def test_ds1337_alarm_irq_off_keeps_inta_released(guest: RoadtestSession) -> None:
    """RTC_AIE_OFF after the alarm is set clears A1IE: at the match the chip still sets
    A1F (it compares whatever the enables say), but INTA stays released and no
    interrupt comes."""
    with guest.bound(DS1337_IRQ, kept_clock(ALARM_START)) as dev, RTC(dev.path) as rtc:
        model = dev.model
        line = dev.lines["irq"]
        rtc.set_wake_alarm(datetime.datetime(2021, 1, 1, 1, 2, 0), enabled=True)
        assert model.register(REG_DS1337_CONTROL) & A1IE
        rtc.alarm_irq(False)
        assert not model.register(REG_DS1337_CONTROL) & A1IE
        assert not rtc.read_wake_alarm().enabled
        fired = line.interrupts
        model.advance(10)
        assert model.alarm1_flag
        assert model.irq is not None and model.irq.input
        assert line.interrupts == fired


# DS1340: the trickle charger.


@pytest.mark.parametrize(
    ("device", "ohms"),
    [(TRICKLE_250, 250), (TRICKLE_2K, 2000), (TRICKLE_4K, 4000)],
    ids=["250", "2k", "4k"],
)
def test_ds1340_trickle_charger(
    guest: RoadtestSession, device: I2CDevice[DS1340], ohms: int
) -> None:
    """trickle-resistor-ohms selects the resistor between VCC and VBACKUP: the probe
    writes the trickle-charge register (08h) with TCS = 1010 (the one pattern that enables
    the charger) and ROUT for that resistor (DS1340 Table 3)."""
    with guest.bound(device) as dev:
        model = dev.model
        charger = model.trickle_charger
        assert charger is not None, f"08h = {model.register(REG_TRICKLE):#04x}: disabled"
        assert charger[1] == ohms
        assert len(model.reg_writes(REG_TRICKLE)) == 1


def test_ds1340_trickle_charger_off_without_resistor(guest: RoadtestSession) -> None:
    """No trickle-resistor-ohms: the register is not written; the charger stays disabled
    as at power-on. An unsupported resistor (1000 ohm) leaves it disabled too."""
    with guest.bound(DS1340_RTC) as dev:
        model = dev.model
        assert isinstance(model, DS1340)
        assert model.reg_writes(REG_TRICKLE) == []
        assert model.trickle_charger is None
    with guest.bound(TRICKLE_1K) as dev:
        assert dev.model.trickle_charger is None
        guest.assert_kernel_log("Unsupported ohm value 1000")


def test_ds1340_not_chargeable_means_no_charging(guest: RoadtestSession) -> None:
    """aux-voltage-chargeable = <0> is "not chargeable" (rtc.yaml): the charger stays
    disabled, as at power-on. Without kernel-patches/rtc/0007 the driver took it for DS =
    01 ("no diode") with TCS = 1010: the charger enabled, with the larger current (DS1340
    Table 3)."""
    with guest.bound(NOT_CHARGEABLE) as dev:
        assert dev.model.trickle_charger is None


def test_ds1340_sets_the_century_enable(guest: RoadtestSession) -> None:
    """With CEB set, CB toggles when the years roll 99 -> 00 (DS1340 hours register): the
    driver sets CEB with the time."""
    with guest.bound(DS1340_RTC) as dev, RTC(dev.path) as rtc:
        set_time(rtc, dev.model, CHRISTMAS)
        assert dev.model.register(REG_HOURS) & CEB


# M41T00: the frequency test and the calibration.


def test_m41t00_frequency_test(guest: RoadtestSession) -> None:
    """frequency_test is the FT bit (control 07h bit 6: FT/OUT toggles at 512 Hz)."""
    with guest.bound(M41T00_RTC) as dev:
        model = dev.model
        assert isinstance(model, M41T00)
        attr = (dev.path / "rtc").only("rtc*") / "frequency_test"
        assert read_str(attr) == "off"
        write_int(attr, 1)
        assert model.frequency_test and read_str(attr) == "on"
        assert model.register(REG_CONTROL) & 0x80  # OUT left as it was
        write_int(attr, 0)
        assert not model.frequency_test and read_str(attr) == "off"


@pytest.mark.parametrize(
    ("control", "ppb"), [(0x80 | 0x20 | 3, 3 * 4068), (0x80 | 5, 5 * 2034), (0x80, 0)]
)
def test_m41t00_offset_steps(guest: RoadtestSession, control: int, ppb: int) -> None:
    """The calibration's size: +4.068 ppm a step with S = 1, -2.034 ppm with S = 0
    ("Clock calibration"); offset reports it in ppb."""
    model = M41T00()
    model.set_time(CHRISTMAS)
    model.poke(REG_CONTROL, control)
    with guest.bound(M41T00_RTC, model) as dev:
        offset = (dev.path / "rtc").only("rtc*") / "offset"
        assert abs(read_int(offset)) == ppb
        write_int(offset, 0)
        assert model.calibration_ppb == 0
        with pytest.raises(OSError) as info:
            write_int(offset, 1_000_000)  # 1000 ppm: beyond 31 steps either way
        assert info.value.errno == errno.ERANGE


def test_m41t00_offset_sign(guest: RoadtestSession) -> None:
    """S = 1 is positive calibration, which speeds the clock up (M41T00 "Clock
    calibration"); the ABI's offset (sysfs-class-rtc "offset") is positive when a day
    passes more slowly: a sped-up clock has a negative offset, both ways (without
    kernel-patches/rtc/0006 the driver gave S = 1 a positive offset)."""
    model = M41T00()
    model.set_time(CHRISTMAS)
    model.poke(REG_CONTROL, 0x80 | 0x20 | 3)  # sped up by 12.204 ppm
    with guest.bound(M41T00_RTC, model) as dev:
        offset = (dev.path / "rtc").only("rtc*") / "offset"
        assert read_int(offset) == -3 * 4068
        write_int(offset, 2 * 2034)  # a longer day: slowed down by two steps
        assert model.calibration_ppb == -2 * 2034
        write_int(offset, -4068)
        assert model.calibration_ppb == 4068
