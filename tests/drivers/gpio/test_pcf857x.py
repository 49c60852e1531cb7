"""PCF8574 / PCF8575 I/O expanders (drivers/gpio/gpio-pcf857x.c), through /dev/gpiochipN.

What is expected comes from NXP's datasheets (PCF8574/74A Rev. 5, PCF8575; see
roadtest/models/pcf857x.py), the GPIO character device's v2 ABI
(include/uapi/linux/gpio.h) and the binding (Documentation/devicetree/bindings/gpio/
nxp,pcf8575.yaml):

- a port write sets every pin's latch at once: 0 drives the pin low, 1 lets it be pulled
  up and read as an input ("The I/Os should be high before being used as inputs");
- a read returns the pins' levels;
- INT (active low, open drain) is asserted when an input pin changes and released when
  the port is read or written: the device is an interrupt controller whose lines are its
  pins, nested under one of our virtio-gpio lines.
"""

from __future__ import annotations

import errno

import pytest

from roadtest.fuzz.events import Pass, TransferFails
from roadtest.models.pcf857x import PCF8574, PCF8575, PCF857x
from roadtest.testing import (
    EDGE_BOTH,
    BindError,
    EventId,
    GpioChip,
    I2CDevice,
    LineFlag,
    RoadtestSession,
    wait_until,
)

# The driver requests its interrupt IRQF_TRIGGER_FALLING (INT asserted = high to low):
# the node says the same.
EXPANDER = I2CDevice(
    compatible="nxp,pcf8574",
    model=PCF8574,
    gpios=("irq",),
    dts="""
        gpio@$addr$ {
            compatible = "nxp,pcf8574";
            reg = <0x$addr$>;
            gpio-controller;
            #gpio-cells = <2>;
            interrupt-controller;
            #interrupt-cells = <2>;
            interrupt-parent = <&gpio>;
            interrupts = <$irq$ IRQ_TYPE_EDGE_FALLING>;
        };
    """,
)

WIDE = I2CDevice(
    compatible="nxp,pcf8575",
    model=PCF8575,
    gpios=("irq",),
    dts="""
        gpio@$addr$ {
            compatible = "nxp,pcf8575";
            reg = <0x$addr$>;
            gpio-controller;
            #gpio-cells = <2>;
            interrupt-controller;
            #interrupt-cells = <2>;
            interrupt-parent = <&gpio>;
            interrupts = <$irq$ IRQ_TYPE_EDGE_FALLING>;
        };
    """,
)

# The binding: a 1 in lines-initial-states is a line "initialized to the low-level
# output state", a 0 one "initialized to the input (pulled-up) state". P0 and P2 low.
INITIAL_LOW = 0b0000_0101
PRESET = I2CDevice(
    compatible="nxp,pcf8574",
    model=PCF8574,
    dts="""
        gpio@$addr$ {
            compatible = "nxp,pcf8574";
            reg = <0x$addr$>;
            gpio-controller;
            #gpio-cells = <2>;
            lines-initial-states = <0x05>;
        };
    """,
)


def test_probe_identity(guest: RoadtestSession) -> None:
    with guest.bound(EXPANDER) as dev, GpioChip(dev.path) as chip:
        info = chip.info()
        assert (info.label, info.lines) == ("pcf8574", 8)
        assert info.name == chip.name
        for offset in range(8):
            line = chip.line_info(offset)
            assert line.offset == offset and not line.used
            # Power-on, every latch is 1: each pin is usable as an input.
            assert LineFlag.INPUT in line.flags and not line.is_output
        # The probe reads the port (is the chip there?) and writes nothing: the pins stay
        # as they were ("quasi-bidirectional": a write could drive one low).
        assert dev.model.reads >= 1
        assert dev.model.writes == []


def test_wide_probe_identity(guest: RoadtestSession) -> None:
    with guest.bound(WIDE) as dev, GpioChip(dev.path) as chip:
        info = chip.info()
        assert (info.label, info.lines) == ("pcf8575", 16)
        assert dev.model.writes == []


def test_outputs_set_the_latches(guest: RoadtestSession) -> None:
    with guest.bound(EXPANDER) as dev, GpioChip(dev.path) as chip:
        model = dev.model
        with chip.request_output({3: 0}, consumer="led") as led:
            # One write sets all eight latches: P3 low, the others 1 (inputs, untouched).
            assert model.latch == 0b1111_0111
            assert chip.line_info(3).consumer == "led" and chip.line_info(3).is_output
            led.set_values({3: 1})
            assert model.latch == 0xFF
            # Reading an output reads its pin: high, unless the outside pulls it low.
            assert led.get_value(3) == 1
            with chip.request_output({0: 0, 7: 0}) as pair:
                assert model.latch == 0b0111_1110
                pair.set_values({0: 1})
                assert model.latch == 0b1111_1111 & ~(1 << 7)
                assert pair.get_values() == {0: 1, 7: 0}


def test_inputs_read_the_pins(guest: RoadtestSession) -> None:
    with guest.bound(EXPANDER) as dev, GpioChip(dev.path) as chip:
        with chip.request_input([1, 6]) as lines:
            dev.model.pins = 0xFF & ~(1 << 1)
            assert lines.get_values() == {1: 0, 6: 1}
            dev.model.pins = 0xFF & ~(1 << 6)
            assert lines.get_values() == {1: 1, 6: 0}


def test_input_after_output_low(guest: RoadtestSession) -> None:
    # A pin whose latch is 0 reads 0 whatever the outside does: a line that was an
    # output low must get its latch back to 1 before it reads as an input.
    with guest.bound(EXPANDER) as dev, GpioChip(dev.path) as chip:
        with chip.request_output({2: 0}):
            assert dev.model.latch == 0xFF & ~(1 << 2)
        with chip.request_input([2]) as lines:
            assert dev.model.latch == 0xFF
            assert lines.get_value(2) == 1
            dev.model.pins = 0xFF & ~(1 << 2)
            assert lines.get_value(2) == 0


def test_wide_byte_order(guest: RoadtestSession) -> None:
    # PCF8575: the first byte is P07..P00, the second P17..P10; line 9 is P11.
    with guest.bound(WIDE) as dev, GpioChip(dev.path) as chip:
        with chip.request_output({9: 0}):
            assert dev.model.latch == 0xFFFF & ~(1 << 9)
        with chip.request_input([14, 1]) as lines:
            dev.model.pins = 0xFFFF & ~(1 << 14)
            assert lines.get_values() == {14: 0, 1: 1}


def test_edge_events(guest: RoadtestSession) -> None:
    with guest.bound(EXPANDER) as dev, GpioChip(dev.path) as chip:
        model = dev.model
        with chip.request_input([4], edges=EDGE_BOTH) as lines:
            model.pins = 0xFF & ~(1 << 4)
            event = lines.read_event()
            assert (event.id, event.offset, event.line_seqno) == (EventId.FALLING_EDGE, 4, 1)
            # The driver's handler read the port: INT is released.
            wait_until(lambda: bool(model.irq and model.irq.input), "INT released")
            model.pins = 0xFF
            event = lines.read_event()
            assert (event.id, event.offset, event.line_seqno) == (EventId.RISING_EDGE, 4, 2)
            # A change on a pin nobody asked events of interrupts, but is no event here.
            model.pins = 0xFF & ~(1 << 5)
            wait_until(lambda: bool(model.irq and model.irq.input), "INT released")
            model.pins = 0xFF & ~(1 << 5) & ~(1 << 4)
            event = lines.read_event()
            assert (event.id, event.offset) == (EventId.FALLING_EDGE, 4)
            assert lines.pending_events() == []


def test_edge_events_of_two_lines(guest: RoadtestSession) -> None:
    with guest.bound(EXPANDER) as dev, GpioChip(dev.path) as chip:
        with chip.request_input([0, 7], edges=LineFlag.EDGE_FALLING) as lines:
            dev.model.pins = 0b0111_1110  # both fall at once: one INT
            events = [lines.read_event(), lines.read_event()]
            assert sorted(e.offset for e in events) == [0, 7]
            assert all(e.id == EventId.FALLING_EDGE for e in events)
            assert sorted(e.seqno for e in events) == [1, 2]


def test_wide_edge_event_on_port_1(guest: RoadtestSession) -> None:
    with guest.bound(WIDE) as dev, GpioChip(dev.path) as chip:
        with chip.request_input([15], edges=EDGE_BOTH) as lines:
            dev.model.pins = 0x7FFF
            event = lines.read_event()
            assert (event.id, event.offset) == (EventId.FALLING_EDGE, 15)


def test_rising_edge_request_ignores_a_fall(guest: RoadtestSession) -> None:
    """INT is asserted on "any rising or falling edge of the port inputs" (datasheet,
    Interrupt output (INT)): only the driver, reading the port, tells the edges apart,
    and a line requested for rising edges (GPIO_V2_LINE_FLAG_EDGE_RISING) gets no event
    when its pin falls. Before kernel-patches/gpio/0004 the irq_chip had no irq_set_type
    and every change was reported, the fall as a rising edge (the cdev reads no level
    for a request of one edge)."""
    with guest.bound(EXPANDER) as dev, GpioChip(dev.path) as chip:
        with chip.request_input([3], edges=LineFlag.EDGE_RISING) as lines:
            dev.model.pins = 0xFF & ~(1 << 3)  # P3 falls
            wait_until(lambda: not dev.model.int_asserted, "the driver's handler to read")
            # Guest time, not a host timeout, so that a recording repeats.
            guest.sleep(0.5)
            assert lines.pending_events() == [], "a fall of P3 gave an event"
            dev.model.pins = 0xFF  # and rises
            assert lines.read_event().id == EventId.RISING_EDGE


# The probe reads the port twice (presence, then the state its handler compares with),
# requesting line 2 as an input writes the port, then the handler reads it. A failed read
# is no port state: before kernel-patches/gpio/0002 the -EIO was stored as one, whose bits
# differ from the pins', and the handler reported edges no pin made.


def test_a_failed_port_read_fails_the_probe(guest: RoadtestSession) -> None:
    with pytest.raises(BindError), guest.device_events([Pass(1), TransferFails(0)]):
        with guest.bound(EXPANDER):
            pass


def test_failed_read_is_no_edge(guest: RoadtestSession) -> None:
    script: list[Pass | TransferFails] = [Pass(3), TransferFails(0)]
    with guest.device_events(script), guest.bound(EXPANDER) as dev, GpioChip(dev.path) as chip:
        with chip.request_input([2], edges=EDGE_BOTH) as lines:
            dev.model.pins = 0xFF & ~(1 << 5)  # P5 changes: INT, and P2 stays high
            # The handler's read fails: it reads nothing more, so nothing shows it ran but
            # time. Guest time, not a host timeout, so that a recording repeats.
            guest.sleep(0.5)
            assert lines.pending_events() == []


# i2c_transfer() returns the number of messages done, and virtio-i2c's is 0 when the
# first one fails: for one message, 0 is the failure (include/linux/i2c.h, "i2c_transfer
# ... Returns negative errno, else the number of messages executed"). The PCF8575's
# 16-bit accessors took only a negative result for one until kernel-patches/gpio/0001.


@pytest.mark.parametrize(
    "device",
    [
        pytest.param(EXPANDER, id="pcf8574"),
        pytest.param(WIDE, id="pcf8575"),
    ],
)
def test_probe_fails_without_an_answer(guest: RoadtestSession, device: I2CDevice[PCF857x]) -> None:
    # "fail if there's no chip present": the address is NACKed.
    with pytest.raises(BindError), guest.device_events([TransferFails(0)]):
        with guest.bound(device):
            pass


@pytest.mark.parametrize(
    "device",
    [
        pytest.param(EXPANDER, id="pcf8574"),
        pytest.param(WIDE, id="pcf8575"),
    ],
)
def test_failed_write_fails_the_request(guest: RoadtestSession, device: I2CDevice[PCF857x]) -> None:
    # The probe's two reads pass; the write that would drive line 1 low is NACKed.
    with guest.device_events([Pass(2), TransferFails(0)]), guest.bound(device) as dev:
        with GpioChip(dev.path) as chip, pytest.raises(OSError) as info:
            chip.request_output({1: 0})
        assert info.value.errno == errno.EIO
        assert dev.model.writes == []


def test_lines_initial_states_reach_the_chip_with_the_first_write(
    guest: RoadtestSession,
) -> None:
    with guest.bound(PRESET) as dev, GpioChip(dev.path) as chip:
        model = dev.model
        # The probe's one write: P0 and P2 low from the property, the rest inputs.
        assert model.writes == [0xFF & ~INITIAL_LOW]
        with chip.request_output({7: 0}):
            # P0 and P2 stay low, P7 low as asked, the rest inputs.
            assert model.last_write() == 0xFF & ~INITIAL_LOW & ~(1 << 7)
        with chip.request_input([0]) as lines:
            assert model.latch == 0xFF & ~(1 << 2) & ~(1 << 7)
            assert lines.get_value(0) == 1


def test_lines_initial_states_low_after_probe(guest: RoadtestSession) -> None:
    """nxp,pcf8575.yaml: a line whose lines-initial-states bit is 1 "will be initialized
    to the low-level output state". The chip powers up with every latch 1 (datasheet,
    Power-on reset), so the probe must write the latch. Before kernel-patches/gpio/0003
    the probe only recorded the property in its software latch: the pin stayed high until
    an unrelated write. (gpiolib still shows the line as an input: the driver has no
    get_direction(), and one reading the latch would show a line set high as an input.)"""
    with guest.bound(PRESET) as dev:
        assert dev.model.latch & INITIAL_LOW == 0


def test_unbind_with_lines_requested(guest: RoadtestSession) -> None:
    with guest.bound(EXPANDER) as dev, GpioChip(dev.path) as chip:
        lines = chip.request_input([4])
        outputs = chip.request_output({1: 0})
        writes = list(dev.model.writes)
        dev.unbind()
        # The chip is gone: the requests fail, and nothing more reaches the port (the
        # driver has no remove(); it drives the pins high only at system shutdown).
        for request in (lines, outputs):
            with pytest.raises(OSError) as info:
                request.get_values()
            assert info.value.errno == errno.ENODEV
        dev.model.pins = 0xFF & ~(1 << 4)
        assert dev.model.writes == writes and dev.model.latch == 0xFF & ~(1 << 1)
        lines.release()
        outputs.release()


# gpiochip_remove() frees the interrupts still requested on its lines on their users'
# behalf (gpiochip_free_remaining_irqs(), ec8b6f55b981 "gpio: free irqs that are still
# requested when the chip is being removed", in 6.12.y), the cdev's edge detector's among
# them, then disposes of the mappings. The cdev does not know: closing the request frees
# the IRQ again (edge_detector_stop()). UML's interrupt descriptors are static (no
# SPARSE_IRQ): the descriptor is still there, without an action, and free_irq() WARNs.
# x86_64's was freed with the mapping, and free_irq() of a number without a descriptor
# returns quietly, so the same sequence passes there.
@pytest.mark.xfail(
    "config.getoption('--roadtest-machine') in (None, 'um')",
    strict=True,
    reason="gpiolib, not this driver: gpiochip_remove() -> gpiochip_free_remaining_irqs() "
    "frees the IRQ the cdev's edge detector requested; releasing the request then frees "
    "it again: edge_detector_stop() -> free_irq() WARNs 'Trying to free already-free IRQ'",
)
def test_unbind_with_an_edge_request(guest: RoadtestSession) -> None:
    with guest.bound(EXPANDER) as dev, GpioChip(dev.path) as chip:
        lines = chip.request_input([4], edges=EDGE_BOTH)
        dev.unbind()
        with pytest.raises(OSError) as info:
            lines.get_values()
        assert info.value.errno == errno.ENODEV
        lines.release()
