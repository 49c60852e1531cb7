"""LIS3LV02DL accelerometer on I2C (drivers/misc/lis3lv02d/lis3lv02d_i2c.c and the
lis3lv02d core), against a model of the chip (roadtest/models/lis3lv02dl.py, from its
datasheet, Rev 2).

The core reports the acceleration in /sys/devices/platform/lis3lv02d/position as "(x,y,z)"
in mg (Documentation/misc-devices/lis3lv02d.rst). In 12-bit mode at +-2 g one g is 1024
codes (datasheet, "Mechanical characteristics").

Bound from the devicetree, the driver reads its platform data from the node into an
allocation that nothing freed: every bind after the first leaked the previous one, as
kmemleak (the sanitizer kernel, `--roadtest-sanitizers`) reports
(kernel-patches/misc/0001).
"""

from __future__ import annotations

import re

import pytest

from roadtest.models.lis3lv02dl import LIS3LV02DL
from roadtest.testing import I2CDevice, RoadtestSession, read_str
from roadtest.testing.kmemleak import KMEMLEAK

ACCELEROMETER = I2CDevice(
    compatible="st,lis3lv02d",
    model=LIS3LV02DL,
    dts="""
        accelerometer@$addr$ {
            compatible = "st,lis3lv02d";
            reg = <0x$addr$>;
        };
    """,
)

POSITION = "/sys/devices/platform/lis3lv02d/position"


def position(guest: RoadtestSession) -> tuple[int, int, int]:
    text = read_str(guest.path(POSITION))
    match = re.fullmatch(r"\((-?\d+),(-?\d+),(-?\d+)\)", text.strip())
    assert match is not None, text
    x, y, z = (int(v) for v in match.groups())
    return x, y, z


def test_position_in_mg(guest: RoadtestSession) -> None:
    """Flat on a table (1 g on Z), then tilted: the position follows, in mg."""
    with guest.bound(ACCELEROMETER) as dev:
        assert position(guest) == (0, 0, 1000)
        dev.model.x, dev.model.y, dev.model.z = 0.5, -0.25, 0.75
        assert position(guest) == (500, -250, 750)


def test_binding_again_leaks_nothing(guest: RoadtestSession) -> None:
    """Bound, unbound and bound again: kmemleak finds nothing the driver allocated."""
    if not guest.agent.exists(KMEMLEAK):
        pytest.skip("needs kmemleak: the sanitizer kernel (--roadtest-sanitizers)")
    for _ in range(3):
        with guest.bound(ACCELEROMETER):
            pass
    leaks = [report for report in guest.kmemleak_scan() if "lis3lv02d" in report]
    assert not leaks, "kmemleak:\n" + "\n".join(leaks)
