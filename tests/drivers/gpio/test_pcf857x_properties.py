"""PCF8574 datasheet properties (drivers/gpio/gpio-pcf857x.c), through /dev/gpiochipN.

Datasheet PCF8574/PCF8574A Rev. 5, "Quasi-bidirectional I/Os" and "I/O programming": one
write sets the eight output latches; a latch of 0 drives its pin low, a latch of 1 lets
the pin be pulled up, so that what the outside does to it can be read; a read returns
the pins' levels. Whatever a consumer asks of which lines, the chip's latches must be
its outputs' values with every other pin at 1, and each input must read its pin.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from roadtest.models.pcf857x import PCF8574
from roadtest.testing import GpioChip, I2CDevice, RoadtestSession

EXPANDER = I2CDevice(
    compatible="nxp,pcf8574",
    model=PCF8574,
    dts="""
        gpio@$addr$ {
            compatible = "nxp,pcf8574";
            reg = <0x$addr$>;
            gpio-controller;
            #gpio-cells = <2>;
        };
    """,
)

OUTPUTS = st.dictionaries(st.integers(0, 7), st.booleans(), max_size=8)


@given(pins=st.integers(0, 0xFF), outputs=OUTPUTS)
def test_latches_are_outputs_and_inputs_read_pins(
    guest: RoadtestSession, pins: int, outputs: dict[int, bool]
) -> None:
    dev = guest.bound_for_examples(EXPANDER)
    inputs = [offset for offset in range(8) if offset not in outputs]
    dev.model.pins = pins
    with GpioChip(dev.path) as chip:
        driven = chip.request_output(outputs) if outputs else None
        sensed = chip.request_input(inputs) if inputs else None
        try:
            low = sum(1 << offset for offset, value in outputs.items() if not value)
            assert dev.model.latch == 0xFF & ~low
            if sensed is not None:
                assert sensed.get_values() == {o: (pins >> o) & 1 for o in inputs}
            if driven is not None:
                # An output reads its pin: low where it drives low, else the outside.
                assert driven.get_values() == {
                    o: int(bool(v)) & (pins >> o) & 1 for o, v in outputs.items()
                }
        finally:
            for request in (driven, sensed):
                if request is not None:
                    request.release()
