"""The PCF8574/PCF8575 models against their datasheets: power-on, the quasi-bidirectional
port, the framing of writes and reads, and INT."""

from __future__ import annotations

from typing import Any

import pytest

from roadtest.backend.gpio import GpioLine, VirtioGpio
from roadtest.models import ModelError
from roadtest.models.pcf857x import PCF8574, PCF8575, PCF857x


def irq_line(model: PCF857x) -> GpioLine:
    line = VirtioGpio(ngpio=1).line(0)
    model.irq = line
    return line


def test_power_on_all_high() -> None:
    # "Power-on reset": every latch 1, the I/Os high; nothing pulls: the port reads high.
    assert PCF8574().read(1) == b"\xff"
    assert PCF8575().read(2) == b"\xff\xff"
    m = PCF8574()
    assert m.latch == 0xFF and m.writes == []


def test_int_released_at_power_on() -> None:
    m = PCF8574()
    line = irq_line(m)
    assert line.input  # open drain, nothing pulls: the pull-up keeps INT high


def test_latch_low_drives_pin_low() -> None:
    # A latch of 0 drives the pin low whatever the outside does; a 1 reads the outside.
    m = PCF8574()
    m.write(bytes([0b1111_0000]))
    assert m.latch == 0xF0
    assert m.read(1) == bytes([0xF0])
    m.pins = 0b0101_0101
    assert m.read(1) == bytes([0b0101_0000])


def test_write_each_byte_goes_to_the_port() -> None:
    # Fig. "Write mode (output)": each acknowledged data byte is put on the port in turn.
    m = PCF8574()
    m.write(bytes([0x12, 0x34, 0x56]))
    assert m.writes == [0x12, 0x34, 0x56]
    assert m.latch == 0x56
    assert m.last_write() == 0x56


def test_address_only_write_changes_nothing() -> None:
    m = PCF8574()
    m.write(bytes([0x0F]))
    m.write(b"")
    assert m.latch == 0x0F and m.writes == [0x0F]


def test_read_each_byte_samples_the_port() -> None:
    m = PCF8574()
    m.pins = 0xA5
    assert m.read(3) == bytes([0xA5] * 3)
    assert m.reads == 3
    assert m.read(0) == b""


def test_pcf8575_pairs_p0_first() -> None:
    # "the first byte ... P07 to P00 and the second byte P17 to P10"
    m = PCF8575()
    m.write(bytes([0x34, 0x12]))
    assert m.latch == 0x1234
    assert m.read(2) == bytes([0x34, 0x12])
    m.write(bytes([0xFF, 0xFF, 0x00, 0x80]))
    assert m.writes == [0x1234, 0xFFFF, 0x8000]
    m.pins = 0xFFFE
    assert m.read(4) == bytes([0x00, 0x80, 0x00, 0x80])


def test_pcf8575_odd_write_is_refused() -> None:
    # "Every data transmission ... must consist of an even number of bytes"
    m = PCF8575()
    with pytest.raises(ModelError, match="pairs"):
        m.write(bytes([0x00]))
    assert m.latch == 0xFFFF


def test_pcf8575_read_may_stop_after_p0() -> None:
    m = PCF8575()
    m.pins = 0xF00F
    assert m.read(1) == bytes([0x0F])


@pytest.mark.parametrize("bad", [-1, 0x100, "0xff"])
def test_pins_must_fit(bad: Any) -> None:
    m = PCF8574()
    with pytest.raises(ModelError):
        m.pins = bad


def test_int_on_input_change_released_by_read() -> None:
    m = PCF8574()
    line = irq_line(m)
    m.pins = 0xFE  # P0 falls
    assert m.int_asserted and not line.input
    assert m.read(1) == b"\xfe"  # the read resets INT
    assert not m.int_asserted and line.input
    m.pins = 0xFF  # P0 rises: an edge either way
    assert not line.input
    m.read(1)
    assert line.input


def test_int_released_when_port_returns() -> None:
    # "when data on the port is changed to the original setting"
    m = PCF8574()
    line = irq_line(m)
    m.pins = 0x7F
    assert not line.input
    m.pins = 0xFF
    assert line.input and m.reads == 0


def test_int_released_by_write() -> None:
    m = PCF8575()
    line = irq_line(m)
    m.pins = 0x7FFF
    assert not line.input
    m.write(bytes([0xFF, 0xFF]))
    assert line.input


def test_output_pin_causes_no_interrupt() -> None:
    # "a pin configured as an output cannot cause an interrupt"
    m = PCF8574()
    line = irq_line(m)
    m.write(bytes([0xFE]))  # P0 driven low
    m.pins = 0xFE
    m.pins = 0xFF
    assert line.input


def test_writing_a_pin_high_is_no_interrupt() -> None:
    # The write itself resets the interrupt circuit; its own change is the new reference.
    m = PCF8574()
    line = irq_line(m)
    m.write(bytes([0x00]))
    m.write(bytes([0xFF]))
    assert line.input


def test_reset() -> None:
    m = PCF8574()
    line = irq_line(m)
    m.write(bytes([0x00]))
    m.pins = 0x00
    m.read(1)
    m.pins = 0x0F
    m.write(bytes([0xF0]))
    m.pins = 0xFF
    assert not line.input
    m.reset()
    assert m.latch == 0xFF and m.pins == 0xFF and m.writes == [] and m.reads == 0
    assert line.input


def test_pins_set_by_test_is_reported() -> None:
    m = PCF8574()
    seen: list[tuple[str, object]] = []
    m.watch_inputs(lambda name, value: seen.append((name, value)))
    m.pins = 0x0F
    m.write(bytes([0x00]))
    m.reset()
    assert seen == [("pins", 0x0F)]


def test_last_write_without_writes() -> None:
    with pytest.raises(AssertionError, match="never wrote"):
        PCF8574().last_write()
