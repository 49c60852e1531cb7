"""VCNL4010/4020 (drivers/iio/light/vcnl4000.c): a data-ready interrupt handled while the
buffer is off.

From the VCNL4010 datasheet (document 83462), register #14, the interrupt status register
(0x8E): once an interrupt is generated its status bit goes to 1 and stays there until it
is cleared by writing a 1 to it, and the INT pad is pulled down while at least one status
bit is 1. Register #9 (0x89) enables the interrupt on proximity data ready
(int_prox_ready_en). The driver's INT is an edge interrupt (IRQF_TRIGGER_FALLING): a status
bit left set keeps INT low, and no later interrupt can make another falling edge.

A self-timed proximity measurement can end while the driver stops the buffer: its
interrupt then reaches vcnl4010_irq_thread() once the buffer is off, and on 6.12 the
thread clears only the threshold bits, never data-ready: INT stays low for good, and the
threshold events enabled afterwards never come. kernel-patches/iio/0004 is the fix.

The test makes that interleaving: the model ends a measurement as the driver writes 0 to
register #9, and the buffer is stopped from a SCHED_FIFO 99 task. Under simulated time the
guest's scheduling repeats run for run, so the interrupt thread always looks once the
buffer is off; under real time (x86_64, time-travel) it may look earlier, when the trigger
handler still clears the bit, so the test runs only under simulated time.
"""

from __future__ import annotations

import pytest
from vcnl4010_interrupt import wait_int_released

from roadtest.models.vcnl4010 import (
    ICR_PROX_READY_EN,
    ISR_PROX_READY,
    ISR_TH_HI,
    REG_INTERRUPT_CONTROL,
    REG_INTERRUPT_STATUS,
    VCNL4020,
)
from roadtest.testing import (
    GuestPath,
    I2CDevice,
    RoadtestSession,
    read_int,
    write_int,
    write_str,
)
from roadtest.testing.iio import (
    IIOBuffer,
    IIOChanType,
    IIOEventDirection,
    IIOEventMonitor,
    IIOEventType,
    device_index,
    devnode,
)

pytestmark = pytest.mark.roadtest_time("sim")


class MeasurementEndsAtStop(VCNL4020):
    """A VCNL4020 whose self-timed proximity measurement ends as the driver stops the
    buffer: the measurement's data-ready status is set (register #9 still enables it)
    just before the driver's write of 0 to register #9 lands."""

    def __init__(self) -> None:
        super().__init__()
        self.end_at_stop = False

    def reg_write(self, addr: int, val: int) -> None:
        with self._lock:
            stopping = addr == REG_INTERRUPT_CONTROL and not val & ICR_PROX_READY_EN
            if self.end_at_stop and stopping and self.regs[addr] & ICR_PROX_READY_EN:
                self.end_at_stop = False
                assert self.periodic_measurement()
            super().reg_write(addr, val)


SENSOR = I2CDevice(
    compatible="vishay,vcnl4020",
    model=MeasurementEndsAtStop,
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


def stop_at_high_priority(guest: RoadtestSession, enable: GuestPath) -> None:
    """Write 0 to the buffer's `enable` from a SCHED_FIFO 99 task: above the interrupt
    threads (SCHED_FIFO 50), as a real-time task or a slow interrupt path (a GPIO expander
    on I2C, say) can make it, so that the IIO core has turned the buffer off when the
    interrupt thread looks."""
    status, _, err = guest.agent.run(["chrt", "-f", "99", "sh", "-c", f"echo 0 > {enable}"])
    assert status == 0, err.decode(errors="replace")


def test_data_ready_after_the_buffer_stops_is_cleared(guest: RoadtestSession) -> None:
    with guest.bound(SENSOR) as dev:
        model = dev.model
        line = dev.lines["irq"]
        iio = dev.path.only("iio:device*")
        write_int(iio / "buffer0/in_proximity_en", 1)
        write_str(iio / "trigger/current_trigger", f"vcnl4000-dev{device_index(iio)}")
        with IIOBuffer(devnode(iio), index=0) as buffer:
            write_int(iio / "buffer0/length", 128)
            write_int(iio / "buffer0/enable", 1)
            model.prox_result = 0x0123
            assert model.periodic_measurement()
            assert buffer.read("=H") == (0x0123,)
            model.reset_reg_writes()
            model.end_at_stop = True
            stop_at_high_priority(guest, iio / "buffer0/enable")
        assert not model.end_at_stop, "the driver did not stop the buffer through register #9"

        # The interrupt of that last measurement was handled: its status bit cleared
        # (written as 1), and INT released. (Under simulated time the guest's clock
        # stands still while the test waits: let 10 ms of it pass for the thread.)
        guest.sleep(0.01)
        wait_int_released(model)
        assert model.reg_writes(REG_INTERRUPT_STATUS) == [ISR_PROX_READY]

        # So a threshold interrupt after it is a falling edge of its own, and its event
        # comes.
        write_int(iio / "events/in_proximity_thresh_rising_value", 0x1000)
        model.reset_reg_writes()
        with IIOEventMonitor(devnode(iio)) as monitor:
            write_int(iio / "events/in_proximity_thresh_either_en", 1)
            fired = line.interrupts
            model.prox_result = 0x1001
            assert model.periodic_measurement()
            event = monitor.read()
            assert event.chan_type == IIOChanType.IIO_PROXIMITY, event
            assert event.event_type == IIOEventType.IIO_EV_TYPE_THRESH, event
            assert event.direction == IIOEventDirection.IIO_EV_DIR_RISING, event
            wait_int_released(model)
            assert line.interrupts == fired + 1
            assert model.reg_writes(REG_INTERRUPT_STATUS) == [ISR_TH_HI]
            write_int(iio / "events/in_proximity_thresh_either_en", 0)
        assert read_int(iio / "events/in_proximity_thresh_either_en") == 0
