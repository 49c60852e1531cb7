"""OPT3001 datasheet properties (drivers/iio/light/opt3001.c), over every result value."""

from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from roadtest.models.opt3001 import OPT3001
from roadtest.testing import I2CDevice, RoadtestSession, read_str

# Not SENSOR: `roadtest shell opt3001` names each device by its declaration, and
# test_opt3001.SENSOR is the one its users (and tests/guest/test_shell.py) know as `sensor`.
LUX_SENSOR = I2CDevice(
    compatible="ti,opt3001",
    model=OPT3001,
    dts="""
        light-sensor@$addr$ {
            compatible = "ti,opt3001";
            reg = <0x$addr$>;
        };
    """,
)


@given(result=st.integers(0, 0xFFFF))
def test_lux_is_the_datasheet_formula(guest: RoadtestSession, result: int) -> None:
    """Datasheet SBOS681B, Register Maps, "Result Register (offset = 00h)" and its
    Equation 3: the register holds an exponent E (bits 15:12) and a mantissa R (bits
    11:0), and lux = 0.01 x 2^E x R.

    The IIO ABI prints in_illuminance_input as a decimal; it must be that value exactly,
    for every 16-bit result the chip can report."""
    dev = guest.bound_for_examples(LUX_SENSOR)
    dev.model.result = result
    exponent, mantissa = result >> 12, result & 0xFFF
    lux = Decimal(read_str(dev.path.only("iio:device*") / "in_illuminance_input"))
    assert lux == Decimal(mantissa << exponent) / 100, f"result register {result:#06x}"
