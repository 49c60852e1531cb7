"""ADS1015/ADS1115 datasheet property (drivers/iio/adc/ti-ads1015.c): for any input
voltages, any MUX pairing and any full-scale range, a channel's raw value is Table 3's code
(TI SBAS473E for the ADS1015, SBAS444D for the ADS1115):

    code = floor((V_AINp - V_AINn) * 2^(bits-1) / FSR), clipped to -2^(bits-1) .. 2^(bits-1)-1

with the inputs anywhere from GND - 0.3 V to VDD + 0.3 V at VDD = 5 V, in millivolt steps,
read once the chip has converted them.
The ADS1115's +-0.256 V range is left out: its scale cannot be written (see
test_ti_ads1015.py, test_every_available_scale_can_be_written).
"""

from __future__ import annotations

from decimal import ROUND_FLOOR, Decimal

from hypothesis import given
from hypothesis import strategies as st

from roadtest.models.ads1x15 import ADS1015, ADS1115, ADS1x15
from roadtest.testing import I2CDevice, RoadtestSession, read_int, write_str


def adc(compatible: str, model: type[ADS1x15]) -> I2CDevice[ADS1x15]:
    return I2CDevice(
        compatible=compatible,
        model=model,
        dts=f"""
            adc@$addr$ {{
                compatible = "{compatible}";
                reg = <0x$addr$>;
                #address-cells = <1>;
                #size-cells = <0>;
            }};
        """,
    )


ADS1015_PROPERTY = adc("ti,ads1015", ADS1015)
ADS1115_PROPERTY = adc("ti,ads1115", ADS1115)

#: (channel, positive input, negative input or None for GND)
CHANNELS = [
    ("voltage0-voltage1", 0, 1),
    ("voltage0-voltage3", 0, 3),
    ("voltage1-voltage3", 1, 3),
    ("voltage2-voltage3", 2, 3),
    ("voltage0", 0, None),
    ("voltage1", 1, None),
    ("voltage2", 2, None),
    ("voltage3", 3, None),
]
FSR_MV = (6144, 4096, 2048, 1024, 512, 256)
MILLIVOLTS = st.integers(-300, 5300)
INPUTS = st.tuples(MILLIVOLTS, MILLIVOLTS, MILLIVOLTS, MILLIVOLTS)


def check(
    guest: RoadtestSession,
    device: I2CDevice[ADS1x15],
    bits: int,
    inputs: tuple[int, int, int, int],
    channel: tuple[str, int, int | None],
    fsr_mv: int,
) -> None:
    dev = guest.bound_for_examples(device)
    name, positive, negative = channel
    top = 1 << (bits - 1)
    path = dev.path.only("iio:device*")
    write_str(path / f"in_{name}_scale", f"{Decimal(fsr_mv) / top:.9f}")
    model = dev.model
    model.ain0, model.ain1, model.ain2, model.ain3 = (mv / 1000 for mv in inputs)
    # Two conversion times at DR 100b (128 or 1600 SPS): the chip converts continuously
    # and a read with an unchanged configuration returns its latest conversion.
    guest.sleep(0.02)
    millivolts = inputs[positive] - (inputs[negative] if negative is not None else 0)
    code = (Decimal(millivolts) * top / fsr_mv).to_integral_value(ROUND_FLOOR)
    expected = max(-top, min(top - 1, int(code)))
    assert read_int(path / f"in_{name}_raw") == expected


@given(inputs=INPUTS, channel=st.sampled_from(CHANNELS), fsr_mv=st.sampled_from(FSR_MV))
def test_ads1015_raw_is_the_datasheet_code(
    guest: RoadtestSession,
    inputs: tuple[int, int, int, int],
    channel: tuple[str, int, int | None],
    fsr_mv: int,
) -> None:
    check(guest, ADS1015_PROPERTY, 12, inputs, channel, fsr_mv)


@given(inputs=INPUTS, channel=st.sampled_from(CHANNELS), fsr_mv=st.sampled_from(FSR_MV[:-1]))
def test_ads1115_raw_is_the_datasheet_code(
    guest: RoadtestSession,
    inputs: tuple[int, int, int, int],
    channel: tuple[str, int, int | None],
    fsr_mv: int,
) -> None:
    check(guest, ADS1115_PROPERTY, 16, inputs, channel, fsr_mv)
