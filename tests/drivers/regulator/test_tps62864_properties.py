"""TPS62864 datasheet properties (drivers/regulator/tps6286x-regulator.c), through a
regulator-virtual-consumer's min_microvolts and max_microvolts, as test_tps62864.py does.

Datasheet (TPS6286x, register map, VOUT1 at 01h): VOUT = 0.4 V + VOUT1[7:0] x 5 mV, so
codes 0-255 are 0.4 V to 1.675 V, the range the devicetree allows here too.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from roadtest.models.tps6286x import REG_VOUT1, TPS6286x
from roadtest.testing import (
    I2CDevice,
    PlatformDevice,
    RoadtestSession,
    read_int,
    write_int,
)

MIN_UV = 400_000
STEP_UV = 5_000
MAX_UV = MIN_UV + 255 * STEP_UV
# The regulator core clamps a request to the constraints: one above them all is allowed.
ABOVE_ALL = 5_000_000

REGULATOR = I2CDevice(
    compatible="ti,tps62864",
    model=TPS6286x,
    dts=f"""
        regulator@$addr$ {{
            compatible = "ti,tps62864";
            reg = <0x$addr$>;
            regulators {{
                tps62864_props: SW {{
                    regulator-name = "+0.85V";
                    regulator-min-microvolt = <{MIN_UV}>;
                    regulator-max-microvolt = <{MAX_UV}>;
                }};
            }};
        }};
    """,
)

CONSUMER = PlatformDevice(
    compatible="regulator-virtual-consumer",
    dts="""
        tps62864-props-consumer {
            compatible = "regulator-virtual-consumer";
            default-supply = <&tps62864_props>;
        };
    """,
)


def refused(guest: RoadtestSession) -> int:
    """How often, since the test began, the consumer logged a refused request (EINVAL)."""
    return sum("regulator_set_voltage() failed: -22" in line for line in guest.kernel_log())


@given(microvolts=st.integers(MIN_UV, MAX_UV))
def test_every_allowed_voltage_is_its_vout_code(guest: RoadtestSession, microvolts: int) -> None:
    """A request of at least `microvolts` (regulator_set_voltage(min, max): the lowest
    voltage at or above min) sets VOUT1 to the datasheet's code for the first step at or
    above it, and the regulator reports that step's voltage."""
    code = -(-(microvolts - MIN_UV) // STEP_UV)  # ceil: the first step at or above
    with guest.bound(REGULATOR) as reg, guest.bound(CONSUMER) as consumer:
        model = reg.model
        write_int(consumer.path / "max_microvolts", ABOVE_ALL)
        write_int(consumer.path / "min_microvolts", microvolts)
        assert model.regs[REG_VOUT1] == code
        # Written once, or not at all if VOUT1 held the code already (its reset value).
        assert model.reg_writes(REG_VOUT1) in ([code], [])
        regulator = (reg.path / "regulator").only("regulator.*")
        assert read_int(regulator / "microvolts") == MIN_UV + code * STEP_UV


@given(microvolts=st.one_of(st.integers(1, MIN_UV - 1), st.integers(MAX_UV + 1, 2 * ABOVE_ALL)))
def test_a_voltage_outside_the_range_writes_nothing(
    guest: RoadtestSession, microvolts: int
) -> None:
    """A request of exactly `microvolts` (min = max), outside 0.4-1.675 V, which no VOUT
    code gives: the regulator core refuses it (the consumer logs the error) and the chip's
    voltage registers are not written."""
    with guest.bound(REGULATOR) as reg, guest.bound(CONSUMER) as consumer:
        model = reg.model
        before = model.microvolts
        refusals = refused(guest)
        write_int(consumer.path / "max_microvolts", microvolts)
        write_int(consumer.path / "min_microvolts", microvolts)
        assert refused(guest) == refusals + 1, "the request was not refused"
        assert model.all_reg_writes() == []
        regulator = (reg.path / "regulator").only("regulator.*")
        assert read_int(regulator / "microvolts") == before
