"""VCNL4010/4020 proximity and light sensor (drivers/iio/light/vcnl4000.c), as in the RFC.

Beyond the RFC: the decoded events' direction and type, the driver clearing
the interrupt status it handled (and so releasing INT), the enable/disable
register writes, on-demand measurements, the sampling frequency, EBUSY while
the chip measures periodically, and in_proximity_raw, which panicked the
guest on 6.12 (kernel-patches/iio/0001: a division by the VCNL4040/4200-only
ps_scale, 0 on these chips).
"""

from __future__ import annotations

import errno

import pytest
from vcnl4010_interrupt import wait_int_released

from roadtest.models.vcnl4010 import (
    COMMAND_ALS_DATA_RDY,
    COMMAND_ALS_OD,
    COMMAND_PROX_EN,
    COMMAND_PROX_OD,
    COMMAND_SELFTIMED_EN,
    ICR_PROX_READY_EN,
    ICR_THRES_EN,
    ISR_PROX_READY,
    ISR_TH_HI,
    ISR_TH_LOW,
    REG_COMMAND,
    REG_HIGH_THRESHOLD_HIGH,
    REG_HIGH_THRESHOLD_LOW,
    REG_INTERRUPT_CONTROL,
    REG_INTERRUPT_STATUS,
    REG_LOW_THRESHOLD_HIGH,
    REG_LOW_THRESHOLD_LOW,
    REG_PROXIMITY_RATE,
    VCNL4020,
)
from roadtest.testing import (
    BoundDevice,
    GuestPath,
    I2CDevice,
    RoadtestSession,
    read_float,
    read_int,
    read_str,
    write_int,
    write_str,
)
from roadtest.testing.iio import (
    IIOBuffer,
    IIOChanType,
    IIOEvent,
    IIOEventDirection,
    IIOEventMonitor,
    IIOEventType,
    device_index,
    devnode,
    triggers,
)

SENSOR = I2CDevice(
    compatible="vishay,vcnl4020",
    model=VCNL4020,
    gpios=("irq",),
    dts="""
        light-sensor@$addr$ {
            compatible = "vishay,vcnl4020";
            reg = <0x$addr$>;
            interrupt-parent = <&gpio>;
            interrupts = <$irq$ IRQ_TYPE_EDGE_FALLING>;
        };
    """,
)


def assert_proximity_event(event: IIOEvent, direction: IIOEventDirection) -> None:
    assert event.chan_type == IIOChanType.IIO_PROXIMITY, event
    assert event.event_type == IIOEventType.IIO_EV_TYPE_THRESH, event
    assert event.direction == direction, event
    assert not event.differential, event
    # Not asserted: the channel number. vcnl4010_irq_thread() sends channel 1
    # for the (unindexed, channel 0) proximity channel; see the report.


def test_lux(guest: RoadtestSession) -> None:
    with guest.bound(SENSOR) as dev:
        model = dev.model
        iio = dev.path.only("iio:device*")
        assert read_float(iio / "in_illuminance_scale") == 0.25
        data = [(0x00, 0x00), (0x12, 0x34), (0xFF, 0xFF)]
        for high, low in data:
            model.als_result = high << 8 | low
            assert read_int(iio / "in_illuminance_raw") == high << 8 | low
        # Each read was one on-demand measurement, and reading the result consumed its data-ready.
        assert model.reg_writes(REG_COMMAND) == [COMMAND_ALS_OD] * len(data)
        assert not model.regs[REG_COMMAND] & COMMAND_ALS_DATA_RDY


def test_lux_timeout(guest: RoadtestSession) -> None:
    with guest.bound(SENSOR) as dev:
        dev.model.measurements_complete = False
        with pytest.raises(OSError) as info:
            read_str(dev.path.only("iio:device*") / "in_illuminance_raw")
        assert info.value.errno == errno.EIO


def test_proximity_raw(guest: RoadtestSession) -> None:
    # A plain 16-bit count, as before 6.9 (the VCNL4040/4200's /16 scaling is theirs only).
    with guest.bound(SENSOR) as dev:
        model = dev.model
        raw = dev.path.only("iio:device*") / "in_proximity_raw"
        for value in [0x0000, 0x0001, 0x1234, 0xFFFF]:
            model.prox_result = value
            assert read_str(raw) == str(value)
        assert model.reg_writes(REG_COMMAND) == [COMMAND_PROX_OD] * 4


def test_sampling_frequency(guest: RoadtestSession) -> None:
    with guest.bound(SENSOR) as dev:
        model = dev.model
        iio = dev.path.only("iio:device*")
        freq = iio / "in_proximity_sampling_frequency"
        assert read_float(freq) == 1.95  # rate 0, the reset value
        write_str(freq, "125")
        model.assert_reg_write_once(REG_PROXIMITY_RATE, 6)
        assert read_float(freq) == 125.0
        # While the chip measures periodically the rate must not change (the model
        # would refuse it); the driver answers EBUSY instead of writing.
        write_int(iio / "events/in_proximity_thresh_either_en", 1)
        with pytest.raises(OSError) as info:
            write_str(freq, "250")
        assert info.value.errno == errno.EBUSY
        with pytest.raises(OSError) as info:
            read_str(iio / "in_illuminance_raw")
        assert info.value.errno == errno.EBUSY
        model.assert_reg_write_once(REG_PROXIMITY_RATE, 6)
        write_int(iio / "events/in_proximity_thresh_either_en", 0)


def check_threshold_event(
    dev: BoundDevice[VCNL4020],
    iio: GuestPath,
    prox: int,
    direction: IIOEventDirection,
    status: int,
) -> None:
    model = dev.model
    line = dev.lines["irq"]
    enable = iio / "events/in_proximity_thresh_either_en"
    with IIOEventMonitor(devnode(iio)) as monitor:
        write_int(enable, 1)
        # Periodic proximity measurements with threshold interrupts on proximity.
        model.assert_last_reg_write(REG_COMMAND, COMMAND_SELFTIMED_EN | COMMAND_PROX_EN)
        model.assert_last_reg_write(REG_INTERRUPT_CONTROL, ICR_THRES_EN)

        model.prox_result = prox
        fired = line.interrupts
        # INT goes low. Not asserted here: where the guest runs beside the test (real
        # time, time-travel) its interrupt thread may already have cleared the status,
        # which releases INT. The falling edge shows in the line's count and the event.
        assert model.periodic_measurement(), "the driver did not start periodic measurements"

        assert_proximity_event(monitor.read(), direction)
        wait_int_released(model)
        assert line.interrupts == fired + 1, "the model did not assert INT (one falling edge)"
        # Read back only once the interrupt thread is done with the chip: before, the
        # two race for the bus and the register sequence (a golden trace) varies.
        assert read_int(enable) == 1
        # It cleared exactly the threshold bit it reported, by writing 1 to it.
        assert model.reg_writes(REG_INTERRUPT_STATUS) == [status]
        assert not monitor.pending()

        write_int(enable, 0)
        model.assert_last_reg_write(REG_COMMAND, 0)
        model.assert_last_reg_write(REG_INTERRUPT_CONTROL, 0)
        assert read_int(enable) == 0


def test_proximity_thresh_rising(guest: RoadtestSession) -> None:
    with guest.bound(SENSOR) as dev:
        model = dev.model
        iio = dev.path.only("iio:device*")
        high_thresh = iio / "events/in_proximity_thresh_rising_value"
        write_int(high_thresh, 0x1234)
        model.assert_last_reg_write(REG_HIGH_THRESHOLD_HIGH, 0x12)
        model.assert_last_reg_write(REG_HIGH_THRESHOLD_LOW, 0x34)
        model.reset_reg_writes()
        assert read_int(high_thresh) == 0x1234

        check_threshold_event(dev, iio, 0x1235, IIOEventDirection.IIO_EV_DIR_RISING, ISR_TH_HI)


def test_proximity_thresh_falling(guest: RoadtestSession) -> None:
    with guest.bound(SENSOR) as dev:
        model = dev.model
        iio = dev.path.only("iio:device*")
        low_thresh = iio / "events/in_proximity_thresh_falling_value"
        write_int(low_thresh, 0x0ABC)
        model.assert_last_reg_write(REG_LOW_THRESHOLD_HIGH, 0x0A)
        model.assert_last_reg_write(REG_LOW_THRESHOLD_LOW, 0xBC)
        model.reset_reg_writes()
        assert read_int(low_thresh) == 0x0ABC

        # Nothing in front of the sensor: 0 counts, below the low threshold.
        check_threshold_event(dev, iio, 0, IIOEventDirection.IIO_EV_DIR_FALLING, ISR_TH_LOW)


def test_proximity_triggered(guest: RoadtestSession) -> None:
    data = [
        (0x00, 0x00, 0x0000),
        (0x00, 0x01, 0x0001),
        (0xF0, 0x02, 0xF002),
        (0xFF, 0xFF, 0xFFFF),
    ]
    with guest.bound(SENSOR) as dev:
        model = dev.model
        iio = dev.path.only("iio:device*")
        # The driver's own trigger, "%s-dev%d" of the IIO device; its number varies.
        name = f"vcnl4000-dev{device_index(iio)}"
        assert name in triggers(guest.agent), f"no trigger {name}: {sorted(triggers(guest.agent))}"

        write_int(iio / "buffer0/in_proximity_en", 1)
        write_str(iio / "trigger/current_trigger", name)
        with IIOBuffer(devnode(iio), index=0) as buffer:
            write_int(iio / "buffer0/length", 128)
            write_int(iio / "buffer0/enable", 1)
            model.assert_last_reg_write(REG_INTERRUPT_CONTROL, ICR_PROX_READY_EN)
            model.assert_last_reg_write(REG_COMMAND, COMMAND_SELFTIMED_EN | COMMAND_PROX_EN)

            for high, low, expected in data:
                model.prox_result = high << 8 | low
                assert model.periodic_measurement()
                # One u16 per scan: the timestamp channel is not enabled.
                (value,) = buffer.read("=H")
                assert value == expected
                # The trigger handler cleared data-ready before pushing the scan.
                model.assert_last_reg_write(REG_INTERRUPT_STATUS, ISR_PROX_READY)
                assert model.irq is not None and model.irq.input

            write_int(iio / "buffer0/enable", 0)
            model.assert_last_reg_write(REG_INTERRUPT_CONTROL, 0)
            model.assert_last_reg_write(REG_COMMAND, 0)
