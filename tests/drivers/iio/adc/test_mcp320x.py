"""Microchip MCP3002/3008/3201/3204/3208 ADCs over SPI (drivers/iio/adc/mcp320x.c), against
the datasheets (roadtest/models/mcp320x.py cites them) through the IIO sysfs ABI
(Documentation/ABI/testing/sysfs-bus-iio): in_voltageN_raw for a single-ended channel,
in_voltageN-voltageM_raw for a pseudo-differential pair (N the IN+), in_voltage_scale in
millivolts a code.

The datasheets' transfer function (section 4): code = 2^n * VIN / VREF, VIN the channel
against VSS or IN+ - IN-; 0 when VIN is below 0, 2^n - 1 at and above VREF. The reference
here is a fixed 3.3 V regulator (vref-supply, as the binding
microchip,mcp3201.yaml requires it); the driver's scale is its voltage in mV over 2^n
(IIO_VAL_FRACTIONAL_LOG2, which IIO prints with 9 decimals, truncated), shared by type:
in_voltage_scale, and in_voltage-voltage_scale for the pseudo-differential channels.

The MCP3x01 (no DIN) clocks out two high-impedance bits, then the null bit, before its
result (MCP3201 Figure 6-1: "two unknown bits"). The driver shifted the whole first byte
into the value (`rx_buf[0] << 7 | rx_buf[1] >> 1`) without masking those bits, so it
read the right value only where MISO is pulled down; with a pull-up it read 0x6000 over
the result (test_mcp3201_where_miso_is_pulled_up; kernel-patches/iio/0020 masks them).
"""

from __future__ import annotations

import errno
import functools
from fractions import Fraction

import pytest

from roadtest.fuzz.events import TransferFails
from roadtest.models.mcp320x import MCP3002, MCP3008, MCP3201, MCP3204, MCP3208, MCP320x, Part
from roadtest.testing import (
    BoundDevice,
    RoadtestSession,
    SPIDevice,
    fixed_regulator,
    read_int,
    read_str,
)
from roadtest.testing.guestpath import GuestPath

VREF_MV = 3300

VREF = fixed_regulator("mcp320x_vref", VREF_MV * 1000)


def declare(part: Part) -> SPIDevice[MCP320x]:
    return SPIDevice(
        compatible=f"microchip,{part.name}",
        model=functools.partial(MCP320x, part),
        dts=f"""
            adc@$addr$ {{
                compatible = "microchip,{part.name}";
                reg = <$addr$>;
                spi-max-frequency = <1000000>;
                vref-supply = <&mcp320x_vref>;
            }};
        """,
    )


ADC3002 = declare(MCP3002)  # 2 channels, 10 bits
ADC3008 = declare(MCP3008)  # 8 channels, 10 bits
ADC3201 = declare(MCP3201)  # 1 pseudo-differential input, 12 bits
ADC3204 = declare(MCP3204)  # 4 channels, 12 bits
ADC3208 = declare(MCP3208)  # 8 channels, 12 bits

MULTI = [(ADC3002, 2, 10), (ADC3008, 8, 10), (ADC3204, 4, 12), (ADC3208, 8, 12)]
MULTI_IDS = ["mcp3002", "mcp3008", "mcp3204", "mcp3208"]


def expected_code(millivolts: int, bits: int) -> int:
    """The datasheet's transfer function, in exact arithmetic, clamped."""
    code = Fraction(millivolts * (1 << bits), VREF_MV)
    return max(0, min((1 << bits) - 1, int(code)))


def iio(dev: BoundDevice[MCP320x]) -> GuestPath:
    return dev.path.only("iio:device*")


def set_mv(model: MCP320x, channel: int, millivolts: int) -> None:
    setattr(model, f"ch{channel}", millivolts / 1000)


@pytest.mark.parametrize(
    "device,bits", [(d, b) for d, _, b in MULTI] + [(ADC3201, 12)], ids=[*MULTI_IDS, "mcp3201"]
)
def test_scale_is_vref_over_2_to_the_resolution(
    guest: RoadtestSession, device: SPIDevice[MCP320x], bits: int
) -> None:
    with guest.bound(VREF), guest.bound(device) as dev:
        nano = (VREF_MV * 10**9) >> bits
        scale = f"{nano // 10**9}.{nano % 10**9:09d}"
        # The pseudo-differential channels share it (the MCP3x01 has only those).
        assert read_str(iio(dev) / "in_voltage-voltage_scale") == scale
        if device is not ADC3201:
            assert read_str(iio(dev) / "in_voltage_scale") == scale


@pytest.mark.parametrize("device,channels,bits", MULTI, ids=MULTI_IDS)
def test_single_ended_channels(
    guest: RoadtestSession, device: SPIDevice[MCP320x], channels: int, bits: int
) -> None:
    """Every channel at its own voltage, so that a wrong channel reads a wrong code; then
    the ends: 0 V, one code, half of VREF, VREF and above it."""
    with guest.bound(VREF), guest.bound(device) as dev:
        model = dev.model
        model.vref = VREF_MV / 1000
        levels = [150 + 400 * i for i in range(channels)]  # 150 mV .. 2950 mV
        for ch, mv in enumerate(levels):
            set_mv(model, ch, mv)
        for ch, mv in enumerate(levels):
            assert read_int(iio(dev) / f"in_voltage{ch}_raw") == expected_code(mv, bits)
        last = channels - 1
        for mv in [0, 4, VREF_MV // 2, VREF_MV - 1, VREF_MV, 3600]:
            set_mv(model, last, mv)
            assert read_int(iio(dev) / f"in_voltage{last}_raw") == expected_code(mv, bits)


@pytest.mark.parametrize("device,channels,bits", MULTI, ids=MULTI_IDS)
def test_differential_pairs(
    guest: RoadtestSession, device: SPIDevice[MCP320x], channels: int, bits: int
) -> None:
    """Each pair both ways: IN+ - IN-, and 0 with IN- above IN+."""
    with guest.bound(VREF), guest.bound(device) as dev:
        model = dev.model
        model.vref = VREF_MV / 1000
        for even in range(0, channels, 2):
            high, low = 2000 + 100 * even, 700
            set_mv(model, even, high)
            set_mv(model, even + 1, low)
            plus = iio(dev) / f"in_voltage{even}-voltage{even + 1}_raw"
            minus = iio(dev) / f"in_voltage{even + 1}-voltage{even}_raw"
            assert read_int(plus) == expected_code(high - low, bits)
            assert read_int(minus) == 0
            set_mv(model, even, low)
            set_mv(model, even + 1, high)
            assert read_int(plus) == 0
            assert read_int(minus) == expected_code(high - low, bits)


def test_mcp3201_where_miso_is_pulled_down(guest: RoadtestSession) -> None:
    """The MCP3201's one input, IN+ against IN-, with the high-impedance bits reading 0."""
    with guest.bound(VREF), guest.bound(ADC3201, MCP320x(MCP3201, high_impedance=0)) as dev:
        model = dev.model
        model.vref = VREF_MV / 1000
        raw = iio(dev) / "in_voltage0-voltage1_raw"
        for plus, minus in [(0, 0), (1650, 0), (2100, 450), (3300, 0), (3000, 100), (50, 80)]:
            set_mv(model, 0, plus)
            set_mv(model, 1, minus)
            assert read_int(raw) == expected_code(plus - minus, 12)


def test_mcp3201_where_miso_is_pulled_up(guest: RoadtestSession) -> None:
    """The two high-impedance bits read 1 (MCP3201 Figure 6-1: "two unknown bits"): they
    are not part of the result (without kernel-patches/iio/0020 a pull-up added 0x6000)."""
    with guest.bound(VREF), guest.bound(ADC3201, MCP320x(MCP3201, high_impedance=1)) as dev:
        model = dev.model
        model.vref = VREF_MV / 1000
        set_mv(model, 0, 1650)
        assert read_int(iio(dev) / "in_voltage0-voltage1_raw") == expected_code(1650, 12)


@pytest.mark.parametrize("failing", [0, 1], ids=["command", "result"])
def test_a_failed_transfer_is_an_eio_and_the_next_read_works(
    guest: RoadtestSession, failing: int
) -> None:
    """TRANS_ERR on the command (transfer 0) or on the result's read (transfer 1) of the
    conversion's message: the read fails with EIO (the driver returns spi_sync's error);
    the next conversion reads the channel."""
    with guest.device_events([TransferFails(at_message=failing)]):
        with guest.bound(VREF), guest.bound(ADC3008) as dev:
            model = dev.model
            model.vref = VREF_MV / 1000
            set_mv(model, 3, 1234)
            raw = iio(dev) / "in_voltage3_raw"
            with pytest.raises(OSError) as raised:
                read_int(raw)
            assert raised.value.errno == errno.EIO
            assert read_int(raw) == expected_code(1234, 10)


def test_unbind_releases_vref(guest: RoadtestSession) -> None:
    """The driver enables its vref supply at probe and disables it at unbind: the
    regulator's count of enabled consumers (num_users) goes up by one, then back; the IIO
    device goes. (A fixed regulator without an enable GPIO counts itself as a user.)"""
    with guest.bound(VREF) as vref:
        users = (vref.path / "regulator").only("regulator.*") / "num_users"
        before = read_int(users)
        with guest.bound(ADC3204) as dev:
            assert read_int(users) == before + 1
            device = iio(dev)
            assert read_int(device / "in_voltage0_raw") == 0
        assert read_int(users) == before
        assert not device.exists()
