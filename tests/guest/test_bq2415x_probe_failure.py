"""A bq24150 charger (drivers/power/supply/bq2415x_charger.c) whose probe meets a transfer
the chip does not acknowledge, at each point of the probe in turn (kernel-patches/power/
0003): the failed probe must undo what it did, and nothing more. On 6.12 its error path
cancelled a delayed work initialized only at the end of the probe (ODEBUG "assert_init
not available" on its timer: a WARN, a panic with panic_on_warn). Found by the hostile
run of tests/drivers/power/test_bq2415x.py.

Here, not beside that test in tests/drivers: a script of failed transfers is not a
golden trace's I/O, and tests/drivers is replayed against its traces.
"""

from __future__ import annotations

import pytest

from roadtest.fuzz.events import Pass, TransferFails
from roadtest.sweep.device import RegisterFile, RegisterPlan
from roadtest.testing import I2CDevice, RoadtestSession
from roadtest.testing.session import BindError

# From the bq24150/bq24150A datasheet: five 8-bit registers, 0x00 to 0x04; bits 7:5 of the
# vendor/part/revision register (0x03) read 010.
REGISTERS = range(0x00, 0x05)
PLAN = RegisterPlan(registers=((0x03, 0b010 << 5),))


def bq24150() -> RegisterFile:
    return RegisterFile(PLAN)


CHARGER = I2CDevice(
    compatible="ti,bq24150",
    model=bq24150,
    dts="""
        charger@$addr$ {
            compatible = "ti,bq24150";
            reg = <0x$addr$>;
            ti,current-limit = <100>;
            ti,weak-battery-voltage = <3400>;
            ti,battery-regulation-voltage = <4200>;
            ti,charge-current = <650>;
            ti,termination-current = <100>;
            ti,resistor-sense = <68>;
        };
    """,
)


def registers_shown(guest: RoadtestSession) -> set[int]:
    """The registers the bound charger's `registers` attribute lists."""
    with guest.bound(CHARGER) as dev:
        text = ((dev.path / "power_supply").only("bq24150-*") / "registers").read_text()
    return {int(line.split("=")[0], 16) for line in text.splitlines()}


# The probe of a bq24150 with this node makes about twenty transfers: every one of them
# fails in one case, and the transfers after the probe in the last ones.
@pytest.mark.parametrize("failing", range(24))
def test_a_probe_whose_transfer_fails_undoes_itself(guest: RoadtestSession, failing: int) -> None:
    with guest.device_events([Pass(failing), TransferFails(at_message=0)]):
        try:
            with guest.bound(CHARGER):
                pass  # bound: a failure the driver tolerates
        except BindError:
            pass  # the probe failed, as it may: the kernel must not have complained
    assert registers_shown(guest) == set(REGISTERS)  # and the next probe works
