"""Datasheet properties of the VCNL4000 family (drivers/iio/light/vcnl4000.c): VCNL4000,
VCNL4010/4020 and VCNL4040.

- Every 16-bit ALS and proximity result is reported exactly, and a result that changes
  reads as the new one.
- On the VCNL4000 and VCNL4010/4020, an on-demand measurement ends when its data-ready bit
  comes (COMMAND register); whenever it comes, or if it never does, and whatever the other
  measurement's data-ready bit says, the driver reports the new result or an error, never
  an earlier one, and never hangs (a hang fails the example: GuestHang).
"""

from __future__ import annotations

import errno
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roadtest.models.base import Input
from roadtest.models.vcnl4000 import (
    ALS_DATA_RDY,
    ALS_OD,
    PROX_DATA_RDY,
    PROX_OD,
    REGISTERS,
    VCNL4000,
)
from roadtest.models.vcnl4010 import VCNL4020
from roadtest.models.vcnl4040 import VCNL4040
from roadtest.testing import I2CDevice, RoadtestSession, read_int, read_str

RESULT = st.integers(0, 0xFFFF)
# Register #0 (COMMAND) and the result registers, as the VCNL4000 and VCNL4010 share them.
REG_COMMAND = REGISTERS["COMMAND"].address
REG_ALS_RESULT_HIGH = REGISTERS["ALS_RESULT_HIGH"].address
REG_ALS_RESULT_LOW = REGISTERS["ALS_RESULT_LOW"].address
REG_PROX_RESULT_HIGH = REGISTERS["PROX_RESULT_HIGH"].address
REG_PROX_RESULT_LOW = REGISTERS["PROX_RESULT_LOW"].address
COMMAND_ALS_DATA_RDY = ALS_DATA_RDY.mask
COMMAND_PROX_DATA_RDY = PROX_DATA_RDY.mask
COMMAND_ALS_OD = ALS_OD.mask
COMMAND_PROX_OD = PROX_OD.mask


def sensor(compatible: str, model: Any) -> I2CDevice[Any]:
    return I2CDevice(
        compatible=compatible,
        model=model,
        dts=f"""
            light-sensor@$addr$ {{
                compatible = "{compatible}";
                reg = <0x$addr$>;
            }};
        """,
    )


VCNL4000_SENSOR = sensor("vishay,vcnl4000", VCNL4000)
VCNL4020_SENSOR = sensor("vishay,vcnl4020", VCNL4020)
VCNL4040_SENSOR = sensor("vishay,vcnl4040", VCNL4040)
SENSORS = pytest.mark.parametrize(
    "device",
    [VCNL4000_SENSOR, VCNL4020_SENSOR, VCNL4040_SENSOR],
    ids=["vcnl4000", "vcnl4020", "vcnl4040"],
)


@SENSORS
@given(results=st.lists(RESULT, min_size=1, max_size=3))
def test_every_illuminance_value(
    guest: RoadtestSession, device: I2CDevice[Any], results: list[int]
) -> None:
    """VCNL4000 (83798) and VCNL4010 (83462) registers #5/#6, "ambient light result" high
    and low byte; VCNL4040 (84274) table 1, ALS_Data (0x09): a 16-bit count, which IIO's
    in_illuminance_raw reports as it is. Each read reports the result measured for it."""
    dev = guest.bound_for_examples(device)
    raw = dev.path.only("iio:device*") / "in_illuminance_raw"
    for result in results:
        dev.model.als_result = result
        assert read_int(raw) == result


@SENSORS
@given(results=st.lists(RESULT, min_size=1, max_size=3))
def test_every_proximity_value(
    guest: RoadtestSession, device: I2CDevice[Any], results: list[int]
) -> None:
    """VCNL4000 and VCNL4010 registers #7/#8, "proximity measurement result" high and low
    byte: a 16-bit count, in_proximity_raw as it is. VCNL4040 table 1, PS_Data (0x08):
    16 bits with PS_HD, which the driver sets; the kernel ABI since "iio: light: vcnl4000:
    Set ps high definition for 4040/4200" reports it / 16 (IIO_VAL_FRACTIONAL, printed
    with 9 decimals: exact for a sixteenth)."""
    dev = guest.bound_for_examples(device)
    raw = dev.path.only("iio:device*") / "in_proximity_raw"
    for result in results:
        dev.model.prox_result = result
        if device is VCNL4040_SENSOR:
            assert Decimal(read_str(raw)) == Decimal(result) / 16
        else:
            assert read_int(raw) == result


# On-demand measurements that take time


class SlowMeasurements:
    """A VCNL4000/4010 whose on-demand measurement takes time: the first `ready_after`
    reads of the COMMAND register still show it in progress, the next one finds it done
    (None: it never ends; 0: done at once, as in the plain model).

    The datasheets (VCNL4000 83798, VCNL4010 83462, register #0): writing als_od or prox_od
    starts a measurement; its data-ready bit (als_data_rdy, prox_data_rdy) is 1 "when
    data is available in the result registers" and is reset by reading them; until then
    the result registers keep the previous measurement. A new od request during one
    restarts it (the model's choice: the datasheets do not say)."""

    ready_after = Input[int | None](initial=0)
    # What the models this mixes into have.
    regs: dict[int, int]
    als_result: int
    prox_result: int
    measurements_complete: bool

    def __init__(self) -> None:
        super().__init__()
        self.ready_after = 0
        self._measuring = 0  # the od bits of the measurement in progress
        self._sampled = (0, 0)  # what it measures: the ALS and proximity results at its start
        self._reads_left: int | None = 0

    def reg_write(self, addr: int, val: int) -> None:
        requested = val & (COMMAND_ALS_OD | COMMAND_PROX_OD) if addr == REG_COMMAND else 0
        if not requested:
            super().reg_write(addr, val)  # type: ignore[misc]
            return
        complete = self.measurements_complete
        self.measurements_complete = False  # the model latches nothing yet
        try:
            super().reg_write(addr, val)  # type: ignore[misc]
        finally:
            self.measurements_complete = complete
        self._measuring, self._reads_left = requested, self.ready_after
        self._sampled = (self.als_result, self.prox_result)
        if self._reads_left == 0:
            self._finish()

    def reg_read(self, addr: int) -> int:
        if addr == REG_COMMAND and self._measuring and self._reads_left is not None:
            if self._reads_left == 0:
                self._finish()
            else:
                self._reads_left -= 1
        value: int = super().reg_read(addr)  # type: ignore[misc]
        return value

    def finish_late(self) -> None:
        """The measurement in progress ends now, whoever waits for it."""
        if self._measuring:
            self._finish()

    def abandon(self) -> None:
        """The measurement in progress never ends."""
        self._reads_left = None

    def _finish(self) -> None:
        regs = self.regs
        als, prox = self._sampled
        if self._measuring & COMMAND_ALS_OD:
            regs[REG_ALS_RESULT_HIGH], regs[REG_ALS_RESULT_LOW] = divmod(als, 256)
            regs[REG_COMMAND] |= COMMAND_ALS_DATA_RDY
        if self._measuring & COMMAND_PROX_OD:
            regs[REG_PROX_RESULT_HIGH], regs[REG_PROX_RESULT_LOW] = divmod(prox, 256)
            regs[REG_COMMAND] |= COMMAND_PROX_DATA_RDY
        regs[REG_COMMAND] &= ~self._measuring  # od reads 0 once the measurement is over
        self._measuring = 0


class SlowVCNL4000(SlowMeasurements, VCNL4000):
    pass


class SlowVCNL4020(SlowMeasurements, VCNL4020):
    pass


SLOW_VCNL4000 = sensor("vishay,vcnl4000", SlowVCNL4000)
SLOW_VCNL4020 = sensor("vishay,vcnl4020", SlowVCNL4020)
# (the sysfs channel, the Input it measures, the other measurement's data-ready bit)
CHANNELS = {
    "illuminance": ("als_result", COMMAND_PROX_DATA_RDY),
    "proximity": ("prox_result", COMMAND_ALS_DATA_RDY),
}
MEASUREMENT = st.tuples(
    RESULT,
    st.one_of(st.none(), st.integers(0, 60)),  # COMMAND reads until data-ready; None: never
    st.booleans(),  # the other measurement's data-ready bit is set (its result not read)
)


@pytest.mark.parametrize("channel", sorted(CHANNELS))
@pytest.mark.parametrize("device", [SLOW_VCNL4000, SLOW_VCNL4020], ids=["vcnl4000", "vcnl4020"])
@given(measurements=st.lists(MEASUREMENT, min_size=1, max_size=3))
def test_data_ready_whenever_it_comes(
    guest: RoadtestSession,
    device: I2CDevice[Any],
    channel: str,
    measurements: list[tuple[int, int | None, bool]],
) -> None:
    """Register #0 (COMMAND) of the VCNL4000 (83798) and VCNL4010 (83462): the driver
    starts an on-demand measurement and must wait for its own data-ready bit. Whenever it
    comes, the read reports the new result or fails with EIO; at once, the new result; never,
    EIO (in bounded time: a hang fails the example). Never the previous result, and never
    on the strength of the other measurement's data-ready bit."""
    dev = guest.bound_for_examples(device)
    model = dev.model
    result_input, other_ready = CHANNELS[channel]
    raw = dev.path.only("iio:device*") / f"in_{channel}_raw"
    for result, ready_after, other in measurements:
        setattr(model, result_input, result)
        model.ready_after = ready_after
        if other:
            model.regs[REG_COMMAND] |= other_ready
        try:
            reported = read_int(raw)
        except OSError as err:
            assert err.errno == errno.EIO, err
            assert ready_after != 0, "the data was ready at the first poll, yet an error"
            # The measurement the driver gave up on does not end later: that case is
            # test_a_measurement_that_ends_after_the_driver_gave_up's.
            model.abandon()
            continue
        assert ready_after is not None, f"reported {reported}: data-ready never came"
        assert reported == result


@pytest.mark.parametrize("channel", sorted(CHANNELS))
@pytest.mark.parametrize("device", [SLOW_VCNL4000, SLOW_VCNL4020], ids=["vcnl4000", "vcnl4020"])
def test_a_measurement_that_ends_after_the_driver_gave_up(
    guest: RoadtestSession, device: I2CDevice[Any], channel: str
) -> None:
    """Register #0 of the VCNL4000 (83798) and VCNL4010 (83462): the data-ready bit is 1
    when a result is in the result registers and is reset only by reading them. A read the
    driver gave up on (EIO: its measurement did not end in time) whose measurement ends
    afterwards leaves data-ready set with that old result; the next read, whose own
    measurement takes time, must report its new result or an error, not the old one.

    The minimal example Hypothesis shrank this property to (old, new and the new
    measurement's COMMAND reads to data-ready drawn): old=0, new=1, ready_after=1, on
    both chips and both channels. It stays a fixed example: a failing property costs its
    shrinking on every run. The regression test of kernel-patches/iio/0003
    (tests/guest/test_fuzz_finds_real_bugs.py shows it failing without the patch)."""
    old, new = 0, 1
    with guest.bound(device) as dev:
        model = dev.model
        result_input, _ = CHANNELS[channel]
        raw = dev.path.only("iio:device*") / f"in_{channel}_raw"
        setattr(model, result_input, old)
        model.ready_after = None
        with pytest.raises(OSError) as info:
            read_int(raw)
        assert info.value.errno == errno.EIO
        model.finish_late()
        setattr(model, result_input, new)
        model.ready_after = 1
        try:
            reported = read_int(raw)
        except OSError as err:
            assert err.errno == errno.EIO, err
            return
        assert reported == new, f"reported the earlier read's {old}"
