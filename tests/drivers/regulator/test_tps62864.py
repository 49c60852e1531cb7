"""TPS62864 regulator (drivers/regulator/tps6286x-regulator.c), as in the RFC, and every step.

The regulator is driven through regulator-virtual-consumer devices, whose
min_microvolts, max_microvolts and mode files call the regulator API.

The RFC's expected CONTROL values (1 << 5 to enable, 1 << 4 for forced PWM,
0 otherwise) assume every other CONTROL bit is clear, as in its model; the
datasheet's reset value is 0x6B. The tests run from both start states: with
CONTROL cleared the RFC's values are checked exactly, and from the datasheet
reset (with the converter software-disabled) the driver must also leave the
bits it does not own alone.
"""

import pytest

from roadtest.models.tps6286x import (
    CONTROL_FPWM,
    CONTROL_RESET_VALUE,
    CONTROL_SWEN,
    REG_CONTROL,
    REG_VOUT1,
    TPS6286x,
    vout_microvolts,
)
from roadtest.testing import (
    I2CDevice,
    PlatformDevice,
    RoadtestSession,
    read_int,
    read_str,
    write_int,
    write_str,
)

RANGE = """
    regulator-min-microvolt = <400000>;
    regulator-max-microvolt = <1675000>;
"""

NORMAL = I2CDevice(
    compatible="ti,tps62864",
    model=TPS6286x,
    dts=f"""
        #include <dt-bindings/regulator/ti,tps62864.h>
        regulator@$addr$ {{
            compatible = "ti,tps62864";
            reg = <0x$addr$>;
            regulators {{
                tps62864_normal: SW {{
                    regulator-name = "+0.85V";
                    {RANGE}
                    regulator-allowed-modes = <TPS62864_MODE_NORMAL TPS62864_MODE_FPWM>;
                }};
            }};
        }};
    """,
)

FPWM = I2CDevice(
    compatible="ti,tps62864",
    model=TPS6286x,
    dts=f"""
        regulator@$addr$ {{
            compatible = "ti,tps62864";
            reg = <0x$addr$>;
            regulators {{
                tps62864_fpwm: SW {{
                    regulator-name = "+0.85V";
                    {RANGE}
                    regulator-initial-mode = <TPS62864_MODE_FPWM>;
                }};
            }};
        }};
    """,
)

NORMAL_CONSUMER = PlatformDevice(
    compatible="regulator-virtual-consumer",
    dts="""
        tps62864-normal-consumer {
            compatible = "regulator-virtual-consumer";
            default-supply = <&tps62864_normal>;
        };
    """,
)

FPWM_CONSUMER = PlatformDevice(
    compatible="regulator-virtual-consumer",
    dts="""
        tps62864-fpwm-consumer {
            compatible = "regulator-virtual-consumer";
            default-supply = <&tps62864_fpwm>;
        };
    """,
)

DRIVER_BITS = CONTROL_SWEN | CONTROL_FPWM
MAX_UV = 1_675_000


@pytest.fixture(
    params=[0x00, CONTROL_RESET_VALUE & ~CONTROL_SWEN], ids=["control-cleared", "control-reset"]
)
def start_control(request: pytest.FixtureRequest) -> int:
    value: int = request.param
    return value


def control(start: int, driver_bits: int) -> int:
    """CONTROL as the driver should write it: its bits set, the others as they were."""
    return driver_bits | (start & ~DRIVER_BITS)


def test_voltage(guest: RoadtestSession, start_control: int) -> None:
    model = TPS6286x(control=start_control)
    with guest.bound(NORMAL, model), guest.bound(NORMAL_CONSUMER) as consumer:
        assert model.all_reg_writes() == []  # binding alone changes nothing
        write_int(consumer.path / "max_microvolts", MAX_UV)
        write_int(consumer.path / "min_microvolts", 800_000)
        model.assert_reg_write_once(REG_CONTROL, control(start_control, CONTROL_SWEN))
        model.assert_reg_write_once(REG_VOUT1, 0x50)
        model.reset_reg_writes()

        for microvolts, selector in [(400_000, 0x00), (900_000, 0x64), (1_675_000, 0xFF)]:
            write_int(consumer.path / "min_microvolts", microvolts)
            model.assert_reg_write_once(REG_VOUT1, selector)
            model.reset_reg_writes()

        write_int(consumer.path / "min_microvolts", 0)
        model.assert_reg_write_once(REG_CONTROL, control(start_control, 0))
        assert model.reg_writes(REG_VOUT1) == []


def test_every_voltage_step(guest: RoadtestSession) -> None:
    """Each of the 256 steps, exactly and from half a step below, as the regulator reports it."""
    model = TPS6286x(control=0x00, vout=0xFF)  # so that the first step is a change too
    with guest.bound(NORMAL, model) as reg, guest.bound(NORMAL_CONSUMER) as consumer:
        regulator = (reg.path / "regulator").only("regulator.*")
        write_int(consumer.path / "max_microvolts", MAX_UV)
        for selector in range(256):
            model.reset_reg_writes()
            write_int(consumer.path / "min_microvolts", vout_microvolts(selector))
            model.assert_reg_write_once(REG_VOUT1, selector)
            assert read_int(regulator / "microvolts") == vout_microvolts(selector)
        # Downwards; half a step below each one must still choose it (the step above).
        for selector in range(254, -1, -1):
            model.reset_reg_writes()
            write_int(consumer.path / "min_microvolts", vout_microvolts(selector))
            model.assert_reg_write_once(REG_VOUT1, selector)
            if selector > 0:
                write_int(consumer.path / "min_microvolts", vout_microvolts(selector) - 2_500)
                assert model.reg_writes(REG_VOUT1) == [selector]
                assert model.microvolts == vout_microvolts(selector)


def test_modes(guest: RoadtestSession, start_control: int) -> None:
    model = TPS6286x(control=start_control)
    with guest.bound(NORMAL, model), guest.bound(NORMAL_CONSUMER) as consumer:
        mode = consumer.path / "mode"
        write_str(mode, "fast")
        model.assert_reg_write_once(REG_CONTROL, control(start_control, CONTROL_FPWM))
        assert read_str(mode) == "fast"
        model.reset_reg_writes()

        write_str(mode, "normal")
        model.assert_reg_write_once(REG_CONTROL, control(start_control, 0))
        assert read_str(mode) == "normal"


def test_dt_force_pwm(guest: RoadtestSession, start_control: int) -> None:
    model = TPS6286x(control=start_control)
    with guest.bound(FPWM, model):
        model.assert_reg_write_once(REG_CONTROL, control(start_control, CONTROL_FPWM))
        model.reset_reg_writes()
        with guest.bound(FPWM_CONSUMER) as consumer:
            assert read_str(consumer.path / "mode") == "fast"
            write_int(consumer.path / "max_microvolts", MAX_UV)
            write_int(consumer.path / "min_microvolts", 800_000)
            model.assert_reg_write_once(
                REG_CONTROL, control(start_control, CONTROL_SWEN | CONTROL_FPWM)
            )


def test_enabled_at_power_on(guest: RoadtestSession) -> None:
    """From the datasheet's reset the converter is already on: enabling writes nothing."""
    model = TPS6286x()
    with guest.bound(NORMAL, model), guest.bound(NORMAL_CONSUMER) as consumer:
        write_int(consumer.path / "max_microvolts", MAX_UV)
        write_int(consumer.path / "min_microvolts", 800_000)
        model.assert_reg_write_once(REG_VOUT1, 0x50)
        assert model.reg_writes(REG_CONTROL) == []
        write_int(consumer.path / "min_microvolts", 0)
        model.assert_reg_write_once(REG_CONTROL, CONTROL_RESET_VALUE & ~CONTROL_SWEN)
        assert not model.enabled
