"""DRV2605L haptic driver (drivers/input/misc/drv260x.c), against a model of the chip
(roadtest/models/drv2605l.py, from datasheet SLOS854C).

In ERM or LRA mode the driver auto-calibrates the actuator at probe: it selects
auto-calibration in MODE, sets GO, and waits for the chip to clear GO, which it does
when the calibration is complete ("Register Map", GO; at most 1.2 s, the longest
AUTO_CAL_TIME of CONTROL4). Then it registers an input device with force feedback
(FF_RUMBLE, Documentation/input/ff.rst).

A chip whose GO never clears (a chip that hangs, a bus that reads the bit as 1) kept
the probe polling it forever, and the process that bound the device with it
(kernel-patches/input/0005). The probe fails now, after a bounded wait.
"""

from __future__ import annotations

import pytest

from roadtest.models.drv2605l import DRV2605L
from roadtest.simtime.clock import NS_PER_MS, NS_PER_S
from roadtest.testing import BindError, EvdevDevice, I2CDevice, RoadtestSession
from roadtest.testing.evdev import EV_FF

pytestmark = pytest.mark.roadtest_time("sim", reason="times the calibration on the model's clock")

FF_RUMBLE = 0x50  # include/uapi/linux/input.h
DRV260X_ERM_MODE = 2  # include/dt-bindings/input/ti-drv260x.h
DRV260X_ERM_LIB_B = 2
LONGEST_CALIBRATION_NS = 1200 * NS_PER_MS  # AUTO_CAL_TIME 3: 1000 to 1200 ms

HAPTICS = I2CDevice(
    compatible="ti,drv2605l",
    model=DRV2605L,
    dts=f"""
        haptics@$addr$ {{
            compatible = "ti,drv2605l";
            reg = <0x$addr$>;
            mode = <{DRV260X_ERM_MODE}>;
            library-sel = <{DRV260X_ERM_LIB_B}>;
            vib-rated-mv = <3200>;
            vib-overdrive-mv = <3200>;
        }};
    """,
)


def test_probe_waits_for_the_calibration(guest: RoadtestSession) -> None:
    """The probe fires one auto-calibration, reads GO until the chip clears it, and
    registers a force feedback device that can rumble."""
    model = DRV2605L()
    with guest.bound(HAPTICS, model) as dev, EvdevDevice.of(dev.path) as haptics:
        assert model.calibrations == 1
        assert max(model.go_read_at) - model.go_written_at[0] >= 700 * NS_PER_MS
        assert EV_FF in haptics.event_types()
        assert FF_RUMBLE in haptics.capabilities(EV_FF)


# Without the fix the probe never ends: its bind fails after 10 s, not the default 30.
@pytest.mark.roadtest_hang_limit(10)
@pytest.mark.timeout(120)
def test_a_calibration_that_never_ends_fails_the_probe(guest: RoadtestSession) -> None:
    """GO never clears: the probe gives up within seconds of the chip's longest
    calibration, and fails."""
    model = DRV2605L()
    model.calibration_ends = False
    with pytest.raises(BindError):
        with guest.bound(HAPTICS, model):
            pass
    assert model.calibrations == 1
    waited = max(model.go_read_at) - model.go_written_at[0]
    assert LONGEST_CALIBRATION_NS <= waited < LONGEST_CALIBRATION_NS + 5 * NS_PER_S
