"""NXP PF8100 PMIC (drivers/regulator/pf8x00-regulator.c), against the sweep's register file:
no model of the chip, its registers as a plan says.

The buck regulators' devicetree nodes may set a current limit (`nxp,ilim-ma`) and a phase
shift (`nxp,phase-shift`), which the driver writes while it registers each regulator. On
6.12 it wrote them through the regulator's description taken for the chip's, a wild
regmap (KASAN: global-out-of-bounds; a crash without KASAN), and put the phase shift in
another regulator's register (both fixed by kernel-patches/regulator/0001).

From the PF8100/PF8200 datasheet: DEVICEID (0x00) holds the family, 0100 in bits 7:4, and
the device, 0000 for the PF8100 in bits 3:0; each buck regulator N has eight registers from
SW1CONFIG1 (0x4D), SWN at 0x4D + 8 * (N - 1), the second of them SWxCONFIG2, whose bits 4:3
select the current limit (11: 4.5 A) and bits 2:0 the phase (000: 45 degrees, then a step
of 45 degrees each, 111: 0 degrees). The regulator ABI
(Documentation/ABI/testing/sysfs-class-regulator) gives the current limit in microamps.
"""

from __future__ import annotations

from roadtest.sweep.device import RegisterFile, RegisterPlan
from roadtest.testing import BoundDevice, I2CDevice, RoadtestSession, read_int, read_str
from roadtest.testing.guestpath import GuestPath

REG_DEVICEID = 0x00
PF8100_DEVICEID = 0b0100 << 4
SW1CONFIG1 = 0x4D


def swconfig2(buck: int) -> int:
    return SW1CONFIG1 + 8 * (buck - 1) + 1


SWXILIM_SHIFT = 3
SWXILIM_MASK = 0b11 << SWXILIM_SHIFT
SWXPHASE_MASK = 0b111
PHASE_90_DEGREES = 0b001

PLAN = RegisterPlan(registers=((REG_DEVICEID, PF8100_DEVICEID),))


def pf8100() -> RegisterFile:
    return RegisterFile(PLAN)


def pmic(buck: str, properties: str) -> I2CDevice[RegisterFile]:
    return I2CDevice(
        compatible="nxp,pf8100",
        model=pf8100,
        dts=f"""
            pmic@$addr$ {{
                compatible = "nxp,pf8100";
                reg = <0x$addr$>;
                regulators {{
                    {buck} {{
                        {properties}
                    }};
                }};
            }};
        """,
    )


def regulator(dev: BoundDevice[RegisterFile], name: str) -> GuestPath:
    regulators = (dev.path / "regulator").glob("regulator.*")
    found = [r for r in regulators if read_str(r / "name") == name]
    assert len(found) == 1, f"{name}: {found}"
    return found[0]


def test_current_limit_from_the_devicetree(guest: RoadtestSession) -> None:
    with guest.bound(pmic("buck1", "nxp,ilim-ma = <4500>;")) as dev:
        assert (dev.model.value(swconfig2(1)) & SWXILIM_MASK) >> SWXILIM_SHIFT == 0b11
        assert read_int(regulator(dev, "buck1") / "microamps") == 4_500_000


def test_phase_shift_from_the_devicetree(guest: RoadtestSession) -> None:
    with guest.bound(pmic("buck2", "nxp,phase-shift = <90>;")) as dev:
        assert dev.model.value(swconfig2(2)) & SWXPHASE_MASK == PHASE_90_DEGREES
        # The phase shift is the only setting the devicetree asks for: no other register
        # (another regulator's configuration among them) is written.
        assert set(dev.model.written) == {swconfig2(2)}
