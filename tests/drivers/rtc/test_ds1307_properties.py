"""DS1307-family datasheet properties (drivers/rtc/rtc-ds1307.c), through RTC_RD_TIME.

DS1307 19-5215 Rev 3 and DS1337 19-4652 Rev 4, "Clock and Calendar": the time
registers hold seconds 00-59, minutes 00-59, hours 00-23 (bit 6 = 0) or 12, 01-11 with
bit 5 PM (bit 6 = 1), day 1-7, date 01-31, month 01-12, year 00-99, in BCD. The DS1307's
CH bit (seconds bit 7) halts the oscillator; the DS1337's OSF (status bit 7) says it
stopped: either way the time is not valid, and RTC_RD_TIME fails with EINVAL.
"""

from __future__ import annotations

import datetime
import errno

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roadtest.models.ds1307 import CH, DS1307, DS1337, H12, REG_HOURS, REG_SECONDS, DS1307Family
from roadtest.testing import I2CDevice, RoadtestSession
from roadtest.testing.rtc import RTC


def node(compatible: str) -> str:
    return f"""
        rtc@$addr$ {{
            compatible = "{compatible}";
            reg = <0x$addr$>;
        }};
    """


# Module-level names: the session builds the guest's devicetree from them.
DS1307_CLOCK: I2CDevice[DS1307Family] = I2CDevice(
    compatible="dallas,ds1307", model=DS1307, dts=node("dallas,ds1307")
)
DS1337_CLOCK: I2CDevice[DS1307Family] = I2CDevice(
    compatible="dallas,ds1337", model=DS1337, dts=node("dallas,ds1337")
)
CLOCKS = {"ds1307": DS1307_CLOCK, "ds1337": DS1337_CLOCK}
clocks = pytest.mark.parametrize("chip", sorted(CLOCKS))

# Whole seconds: the clock has no finer unit.
DATES = st.datetimes(
    datetime.datetime(2000, 1, 1), datetime.datetime(2099, 12, 31, 23, 59, 59)
).map(lambda when: when.replace(microsecond=0))


@clocks
@given(when=DATES, day=st.integers(1, 7))
def test_every_valid_date_reads_back_exactly(
    guest: RoadtestSession, chip: str, when: datetime.datetime, day: int
) -> None:
    """Any date and time of 2000-2099 in the 24-hour registers, with any day 1-7 (the
    datasheet leaves the day's meaning to the user), is what RTC_RD_TIME reports; its
    tm_wday is the day register less one (the driver's Sunday = 1)."""
    dev = guest.bound_for_examples(CLOCKS[chip])
    dev.model.set_time(when, weekday=day)
    with RTC(dev.path) as rtc:
        tm = rtc.read_rtc_time()
        assert tm.to_datetime() == when
        assert tm.tm_wday == day - 1


@clocks
@given(when=DATES)
def test_a_stopped_oscillator_is_an_error(
    guest: RoadtestSession, chip: str, when: datetime.datetime
) -> None:
    """CH (DS1307) or OSF (DS1337) set: whatever date the registers hold, EINVAL."""
    dev = guest.bound_for_examples(CLOCKS[chip])
    model = dev.model
    model.set_time(when)
    if model.chip.halt_bit:
        model.poke(REG_SECONDS, model.register(REG_SECONDS) | CH)
    else:
        model.oscillator_stop_flag = True
    with RTC(dev.path) as rtc:
        with pytest.raises(OSError) as info:
            rtc.read_time()
        assert info.value.errno == errno.EINVAL


@clocks
@given(when=DATES)
def test_a_twelve_hour_clock_at_probe_reads_back(
    guest: RoadtestSession, chip: str, when: datetime.datetime
) -> None:
    """The clock kept in 12-hour mode by another OS: any time reads as it is, and the
    probe leaves the chip in 24-hour mode with the same time."""
    model = CLOCKS[chip].model()
    model.set_time(when, hour24=False)
    with guest.bound(CLOCKS[chip], model) as dev, RTC(dev.path) as rtc:
        assert rtc.read_time() == when
        assert not model.register(REG_HOURS) & H12
        assert model.time == when
