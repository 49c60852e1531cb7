"""BMI160 data-sheet property (drivers/iio/imu/bmi160): for any range and any motion, each
axis reads through IIO as the data sheet's sensitivity says (BST-BMI160-DS000-07 rev. 0.8,
Table 1, and 2.11.4's data registers: LSB first, two's complement):

    raw = round(a * S), clipped to [-32768, 32767],

with S = 16384/8192/4096/2048 LSB/g at +-2/4/8/16 g and 16.4/32.8/65.6/131.2/262.4
LSB/(deg/s) at +-2000..125 deg/s; and raw * in_<type>_scale is a in m/s^2 (rad/s) to the
scale's printed micro step per LSB (sysfs-bus-iio).
"""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from roadtest.models.bmi160 import ACC_RANGES, BMI160, GYR_RANGES, acc_raw, gyr_raw
from roadtest.testing import I2CDevice, RoadtestSession, read_int, read_str, write_str

IMU = I2CDevice(
    compatible="bosch,bmi160",
    model=BMI160,
    dts="""
        imu@$addr$ {
            compatible = "bosch,bmi160";
            reg = <0x$addr$>;
        };
    """,
)

AXIS = st.sampled_from(["x", "y", "z"])
UNIT = st.floats(-1.5, 1.5, allow_nan=False)  # of full scale: beyond it on both sides


@given(
    kind=st.sampled_from(["accel", "anglvel"]),
    range_index=st.integers(0, 4),
    axis=AXIS,
    fraction=UNIT,
)
def test_every_axis_reads_as_the_sensitivity_says(
    guest: RoadtestSession, kind: str, range_index: int, axis: str, fraction: float
) -> None:
    dev = guest.bound_for_examples(IMU)
    iio = dev.path.only("iio:device*")
    ranges = list(ACC_RANGES if kind == "accel" else GYR_RANGES)
    code = ranges[range_index % len(ranges)]
    scale_text = read_str(iio / f"in_{kind}_scale_available").split()[ranges.index(code)]
    write_str(iio / f"in_{kind}_scale", scale_text)
    full_scale = (ACC_RANGES if kind == "accel" else GYR_RANGES)[code][0]
    value = fraction * full_scale
    values = tuple(value if a == axis else 0.0 for a in "xyz")
    if kind == "accel":
        dev.model.acceleration = (values[0], values[1], values[2])
        expected = acc_raw(value, code)
        si = value * 9.80665
    else:
        dev.model.angular_rate = (values[0], values[1], values[2])
        expected = gyr_raw(value, code)
        si = value * math.pi / 180
    raw = read_int(iio / f"in_{kind}_{axis}_raw")
    assert raw == expected
    if abs(fraction) < 1.0:
        # the rounding of raw (half an LSB) and the scale's printed micro step per LSB
        assert abs(raw * float(scale_text) - si) <= abs(raw) * 1e-6 + float(scale_text)
