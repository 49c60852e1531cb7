"""ST FingerTip touchscreen controller (drivers/input/touchscreen/stmfts.c), against the
sweep's register file: no model of the controller (ST publishes no datasheet of it), the
registers as a plan says.

At probe the driver enables its two supplies, vdd and avdd (Documentation/devicetree/
bindings/input/touchscreen/st,stmfts.yaml), reads the controller's identity, then has it
reset and calibrate, each command done when the controller's interrupt reports it.
Whatever fails there fails the probe, which must leave the supplies as it found them: a
regulator's `num_users` (Documentation/ABI/testing/sysfs-class-regulator) counts the
consumers that enabled it.

A probe that failed after the supplies were enabled left them enabled: the regulators
were put still enabled (a WARN) and stayed on, counted as used by a driver that had gone
(kernel-patches/input/0006). The probe disables them now.
"""

from __future__ import annotations

import pytest

from roadtest.fuzz.events import TransferFails
from roadtest.sweep.device import RegisterFile, RegisterPlan
from roadtest.testing import (
    BindError,
    BoundPlatformDevice,
    I2CDevice,
    PlatformDevice,
    RoadtestSession,
    fixed_regulator,
    read_int,
)
from roadtest.testing.guestpath import GuestPath

SUPPLY_UV = 3_300_000


def supply(name: str) -> PlatformDevice:
    return fixed_regulator(f"stmfts_{name}", SUPPLY_UV)


VDD = supply("vdd")
AVDD = supply("avdd")


def stmfts() -> RegisterFile:
    return RegisterFile(RegisterPlan())


TOUCHSCREEN = I2CDevice(
    compatible="st,stmfts",
    model=stmfts,
    gpios=("irq",),
    dts="""
        touchscreen@$addr$ {
            compatible = "st,stmfts";
            reg = <0x$addr$>;
            interrupt-parent = <&gpio>;
            interrupts = <$irq$ IRQ_TYPE_LEVEL_LOW>;
            vdd-supply = <&stmfts_vdd>;
            avdd-supply = <&stmfts_avdd>;
        };
    """,
)


def users(regulator: BoundPlatformDevice) -> GuestPath:
    return (regulator.path / "regulator").only("regulator.*") / "num_users"


@pytest.mark.parametrize(
    "fails",
    [
        pytest.param([TransferFails(at_message=0)], id="identity-unread"),
        pytest.param([], id="no-event"),
    ],
)
def test_a_failed_probe_leaves_the_supplies_as_it_found_them(
    guest: RoadtestSession, fails: list[TransferFails]
) -> None:
    """identity-unread: the read of the controller's identity fails (the first transfer);
    no-event: the controller never reports its reset done (every event the interrupt
    handler reads is empty), so the reset command times out. Either fails the probe, and
    each supply has the users it had before. (no-event has no golden trace: how many
    events the handler reads before the timeout is the clock's, and x86_64's is real.)"""
    with guest.bound(VDD) as vdd, guest.bound(AVDD) as avdd:
        before = read_int(users(vdd)), read_int(users(avdd))
        with guest.device_events(fails), pytest.raises(BindError):
            with guest.bound(TOUCHSCREEN):
                pass
        assert (read_int(users(vdd)), read_int(users(avdd))) == before
