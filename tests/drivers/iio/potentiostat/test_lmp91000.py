"""LMP91000 potentiostat (drivers/iio/potentiostat/lmp91000.c), against the sweep's
register file, its output read by an ADS1119 ADC (drivers/iio/adc/ti-ads1119.c, also a
register file) through the ADC's IIO channel (`io-channels`).

The LMP91000 is an analog front end: it measures nothing itself, the ADC converts its
output. At probe the driver takes the ADC's channels and gives the ADC's IIO device its
own trigger, as the one that device must use. 6.12 gave the trigger before it took the
channels, through a NULL pointer, so every probe that got that far oopsed (the guest
panicked; kernel-patches/iio/0010).

From the LMP91000 binding and datasheet: `ti,tia-gain-ohm` is one of the TIA gains
(7 kOhm here) and `ti,rload-ohm` one of the load resistors (100 Ohm); the registers
(LOCK 0x01, TIACN 0x10, REFCN 0x11, MODECN 0x12) take any write.
"""

from __future__ import annotations

import pytest

from roadtest.sweep.device import RegisterFile, RegisterPlan
from roadtest.testing import BindError, I2CDevice, RoadtestSession, read_str


def register_file() -> RegisterFile:
    return RegisterFile(RegisterPlan())


ADC = I2CDevice(
    compatible="ti,ads1119",
    model=register_file,
    dts="""
        lmp91000_adc: adc@$addr$ {
            compatible = "ti,ads1119";
            reg = <0x$addr$>;
            #address-cells = <1>;
            #size-cells = <0>;
            #io-channel-cells = <1>;

            channel@0 {
                reg = <0>;
                single-channel = <0>;
            };
        };
    """,
)

POTENTIOSTAT = I2CDevice(
    compatible="ti,lmp91000",
    model=register_file,
    dts="""
        potentiostat@$addr$ {
            compatible = "ti,lmp91000";
            reg = <0x$addr$>;
            ti,tia-gain-ohm = <7000>;
            ti,rload-ohm = <100>;
            io-channels = <&lmp91000_adc 0>;
        };
    """,
)

WITHOUT_ADC = I2CDevice(
    compatible="ti,lmp91000",
    model=register_file,
    dts="""
        potentiostat@$addr$ {
            compatible = "ti,lmp91000";
            reg = <0x$addr$>;
            ti,tia-gain-ohm = <7000>;
            ti,rload-ohm = <100>;
        };
    """,
)


@pytest.mark.roadtest_kernel(
    ">=6.11",
    reason='its ADC is the ADS1119, whose driver a9306887eba4 ("iio: adc: ti-ads1119: Add '
    'driver", v6.11) added',
)
def test_binds_with_its_adc(guest: RoadtestSession) -> None:
    with guest.bound(ADC), guest.bound(POTENTIOSTAT) as dev:
        iio = dev.path.only("iio:device*")
        assert read_str(iio / "name") == "lmp91000"
        assert (iio / "in_voltage_raw").exists()


def test_without_an_adc_the_probe_waits_for_one(guest: RoadtestSession) -> None:
    """No ADC to read the output: the probe defers (binds no driver), without an oops."""
    with pytest.raises(BindError):
        with guest.bound(WITHOUT_ADC):
            pass
