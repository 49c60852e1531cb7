"""The ADS1015/ADS1115 model against its datasheets (TI SBAS473E, SBAS444D), without a guest.

Expected values are the datasheets': the register reset values (8.6 / 9.6), the Config
register's fields (Table 6 / Table 8), the data rates, the full-scale ranges and the
code formula with its clipping (Table 3), the ADS1015's left-justified result, and the
comparator's traditional and window modes, latching and queue (8.3.7 / 9.3.7).
"""

from __future__ import annotations

import pytest
from helpers import RecordingLine

from roadtest.models import ModelError
from roadtest.models.ads1x15 import (
    ADS1015,
    ADS1115,
    REG_CONFIG,
    REG_CONVERSION,
    REG_HI_THRESH,
    REG_LO_THRESH,
    ADS1x15,
)
from roadtest.simtime.clock import ManualClock

PARTS = [ADS1015, ADS1115]


def read16(m: ADS1x15, reg: int) -> int:
    m.write(bytes([reg]))
    data = m.read(2)
    return data[0] << 8 | data[1]


def write16(m: ADS1x15, reg: int, value: int) -> None:
    m.write(bytes([reg, value >> 8, value & 0xFF]))


def wired(part: type[ADS1x15]) -> tuple[ADS1x15, RecordingLine]:
    m = part()
    line = RecordingLine()
    m.irq = line
    m.int_output  # noqa: B018 - the harness creates the pin when it wires the line
    m.update_int()
    return m, line


@pytest.mark.parametrize("part", PARTS)
def test_reset_values(part: type[ADS1x15]) -> None:
    m = part()
    assert read16(m, REG_CONVERSION) == 0x0000
    assert read16(m, REG_CONFIG) == 0x8583
    assert read16(m, REG_LO_THRESH) == 0x8000
    assert read16(m, REG_HI_THRESH) == 0x7FFF


def test_ads1015_threshold_low_bits_are_read_only() -> None:
    # SBAS473E Figures 22/23: bits 3:0 read 0h (Lo_thresh) and Fh (Hi_thresh).
    m = ADS1015()
    write16(m, REG_LO_THRESH, 0x123F)
    write16(m, REG_HI_THRESH, 0x4560)
    assert read16(m, REG_LO_THRESH) == 0x1230
    assert read16(m, REG_HI_THRESH) == 0x456F


def test_ads1115_thresholds_take_16_bits() -> None:
    m = ADS1115()
    write16(m, REG_LO_THRESH, 0x123F)
    assert read16(m, REG_LO_THRESH) == 0x123F


@pytest.mark.parametrize("part", PARTS)
def test_conversion_register_is_read_only(part: type[ADS1x15]) -> None:
    with pytest.raises(ModelError, match="read-only"):
        write16(part(), REG_CONVERSION, 0x1234)


@pytest.mark.parametrize("part", PARTS)
def test_pointer_beyond_the_four_registers(part: type[ADS1x15]) -> None:
    m = part()
    with pytest.raises(ModelError, match="undefined"):
        read16(m, 0x04)


@pytest.mark.parametrize(
    ("part", "rates"),
    [
        (ADS1015, (128, 250, 490, 920, 1600, 2400, 3300, 3300)),
        (ADS1115, (8, 16, 32, 64, 128, 250, 475, 860)),
    ],
)
def test_data_rates(part: type[ADS1x15], rates: tuple[int, ...]) -> None:
    m = part()
    assert [m.rate(dr) for dr in range(8)] == list(rates)
    assert m.rate() == rates[4]  # DR = 100b at reset


@pytest.mark.parametrize(
    ("pga", "fsr"),
    [(0, "6.144"), (1, "4.096"), (2, "2.048"), (3, "1.024"), (4, "0.512"), (5, "0.256"),
     (6, "0.256"), (7, "0.256")],
)  # fmt: skip
def test_full_scale_ranges(pga: int, fsr: str) -> None:
    assert str(ADS1115().full_scale(pga)) == fsr


def continuous(m: ADS1x15, mux: int, pga: int = 2, dr: int = 4, comp: int = 0x03) -> None:
    write16(m, REG_CONFIG, mux << 12 | pga << 9 | dr << 5 | comp)


@pytest.mark.parametrize(
    ("volts", "code"),
    [
        (0.0, 0),
        (1.0, 1000),  # 1.0 V / (2.048 V / 2^11)
        (-1.0, -1000),
        (0.001, 1),
        (2.047, 2047),
        (2.048, 2047),  # +FS clips to 7FFh
        (5.0, 2047),
        (-2.048, -2048),
        (-3.0, -2048),  # below -FS: 800h
    ],
)
def test_ads1015_code_is_left_justified(volts: float, code: int) -> None:
    m = ADS1015()
    m.ain0 = volts
    continuous(m, 0)
    assert read16(m, REG_CONVERSION) == (code << 4) & 0xFFFF


@pytest.mark.parametrize(
    ("volts", "code"),
    [(0.0, 0), (1.0, 16000), (0.0000625, 1), (-0.0000625, -1), (2.048, 0x7FFF), (-2.1, -0x8000)],
)
def test_ads1115_codes(volts: float, code: int) -> None:
    m = ADS1115()
    m.ain0 = volts
    continuous(m, 0)
    assert read16(m, REG_CONVERSION) == code & 0xFFFF


@pytest.mark.parametrize(
    ("mux", "expected_volts"),
    [(0, 0.1 - 0.2), (1, 0.1 - 0.4), (2, 0.2 - 0.4), (3, 0.3 - 0.4), (4, 0.1), (5, 0.2),
     (6, 0.3), (7, 0.4)],
)  # fmt: skip
def test_mux_pairs(mux: int, expected_volts: float) -> None:
    m = ADS1115()
    m.ain0, m.ain1, m.ain2, m.ain3 = 0.1, 0.2, 0.3, 0.4
    continuous(m, mux, pga=3)  # +-1.024 V
    raw = read16(m, REG_CONVERSION)
    signed = raw - 0x10000 if raw & 0x8000 else raw
    assert signed == pytest.approx(expected_volts * 32768 / 1.024, abs=1)


@pytest.mark.parametrize("pga", range(8))
def test_pga_scales_the_code(pga: int) -> None:
    m = ADS1115()
    m.ain0 = 0.128
    continuous(m, 4, pga=pga)
    fsr = (6.144, 4.096, 2.048, 1.024, 0.512, 0.256, 0.256, 0.256)[pga]
    assert read16(m, REG_CONVERSION) == int(0.128 * 32768 / fsr)


def test_os_reads_zero_while_a_single_shot_converts() -> None:
    m = ADS1115()
    clock = ManualClock()
    m.clock = clock
    m.ain0 = 1.0
    write16(m, REG_CONFIG, 0xC583)  # OS=1, MUX=100b (AIN0), PGA 2.048 V, single-shot, 128 SPS
    assert read16(m, REG_CONFIG) & 0x8000 == 0
    assert read16(m, REG_CONVERSION) == 0  # not yet
    clock.advance(m.period_ns() - 1)
    assert read16(m, REG_CONFIG) & 0x8000 == 0
    clock.advance(1)  # 1/128 s after the start
    assert read16(m, REG_CONFIG) == 0xC583
    assert read16(m, REG_CONVERSION) == 16000


def test_single_shot_at_once_without_simulated_time() -> None:
    m = ADS1015()
    m.ain2 = 0.5
    write16(m, REG_CONFIG, 0xE583)  # OS=1, MUX=110b (AIN2), single-shot
    assert read16(m, REG_CONFIG) & 0x8000
    assert read16(m, REG_CONVERSION) == 500 << 4


def test_continuous_mode_waits_a_conversion_time() -> None:
    m = ADS1015()
    clock = ManualClock()
    m.clock = clock
    m.ain0 = 1.0
    continuous(m, 4, dr=0)  # AIN0, 128 SPS
    assert read16(m, REG_CONFIG) & 0x8000 == 0  # converting
    clock.advance(m.period_ns(0) - 1)
    assert read16(m, REG_CONVERSION) == 0
    clock.advance(1)
    assert read16(m, REG_CONVERSION) == 1000 << 4


def test_new_configuration_follows_the_conversion_under_way() -> None:
    # SBAS444D 9.4.2: the ongoing conversion completes with the previous settings.
    m = ADS1115()
    clock = ManualClock()
    m.clock = clock
    m.ain0, m.ain1 = 1.0, 0.5
    continuous(m, 4, dr=4)  # AIN0, 128 SPS
    old = m.period_ns(4)
    clock.advance(old + old // 2)  # half-way through the second conversion
    assert read16(m, REG_CONVERSION) == 16000
    continuous(m, 5, dr=7)  # AIN1, 860 SPS
    new = m.period_ns(7)
    clock.advance(old // 2 - 1)
    assert read16(m, REG_CONVERSION) == 16000  # the old conversion has not ended
    clock.advance(1)
    assert read16(m, REG_CONVERSION) == 16000  # it ended: AIN0 still
    clock.advance(new - 1)
    assert read16(m, REG_CONVERSION) == 16000
    clock.advance(1)
    assert read16(m, REG_CONVERSION) == 8000  # the first conversion of AIN1


def comparator(m: ADS1x15, lo: int, hi: int, config: int) -> None:
    shift = 16 - m.bits
    write16(m, REG_LO_THRESH, (lo << shift) & 0xFFFF)
    write16(m, REG_HI_THRESH, (hi << shift) & 0xFFFF)
    write16(m, REG_CONFIG, config)


@pytest.mark.parametrize("part", PARTS)
def test_comparator_disabled_at_reset(part: type[ADS1x15]) -> None:
    m, line = wired(part)
    m.ain0 = 10.0
    m.convert(4)
    assert line.levels == [True]  # released, pulled up
    assert not m.int_asserted


def test_traditional_comparator_with_hysteresis() -> None:
    m, line = wired(ADS1015)
    # AIN0, 2.048 V, continuous, traditional, active low, non-latching, one conversion.
    comparator(m, lo=100, hi=200, config=0x4400)
    m.ain0 = 0.150
    m.convert()
    assert line.input
    m.ain0 = 0.201
    m.convert()
    assert not line.input  # above Hi_thresh: asserted, active low
    m.ain0 = 0.150
    m.convert()
    assert not line.input  # between the thresholds: stays asserted
    m.ain0 = 0.099
    m.convert()
    assert line.input  # below Lo_thresh: deasserted


def test_window_comparator() -> None:
    m, line = wired(ADS1115)
    comparator(m, lo=-1000, hi=1000, config=0x4410)  # window, non-latching
    m.ain0 = 0.0
    m.convert()
    assert line.input
    m.ain0 = -0.1  # -1600 codes: below Lo_thresh
    m.convert()
    assert not line.input
    m.ain0 = 0.0
    m.convert()
    assert line.input
    m.ain0 = 0.1
    m.convert()
    assert not line.input


def test_latching_comparator_clears_on_conversion_read() -> None:
    m, line = wired(ADS1015)
    comparator(m, lo=100, hi=200, config=0x4404)  # latching
    m.ain0 = 0.5
    m.convert()
    assert not line.input
    m.ain0 = 0.0
    m.convert()
    assert not line.input  # latched although below Lo_thresh
    read16(m, REG_CONFIG)
    assert not line.input  # only a Conversion read clears it
    read16(m, REG_CONVERSION)
    assert line.input


@pytest.mark.parametrize(("que", "needed"), [(0, 1), (1, 2), (2, 4)])
def test_queue(que: int, needed: int) -> None:
    m, line = wired(ADS1115)
    comparator(m, lo=0, hi=100, config=0x4400 | que)
    m.ain0 = 1.0
    for _ in range(needed - 1):
        m.convert()
        assert line.input
    m.convert()
    assert not line.input


def test_queue_counts_successive_conversions_only() -> None:
    m, line = wired(ADS1115)
    comparator(m, lo=0, hi=100, config=0x4401)  # two conversions
    m.ain0 = 1.0
    m.convert()
    m.ain0 = 0.001  # 16 codes: inside
    m.convert()
    m.ain0 = 1.0
    m.convert()
    assert line.input
    m.convert()
    assert not line.input


def test_active_high_polarity() -> None:
    m, line = wired(ADS1015)
    comparator(m, lo=100, hi=200, config=0x440C)  # active high, latching
    assert not line.input  # enabled and not asserted: the open drain pulls low
    m.ain0 = 1.0
    m.convert()
    assert line.input


def test_conversion_ready_pulses_in_continuous_mode() -> None:
    # Hi_thresh MSB 1 and Lo_thresh MSB 0: ALERT/RDY pulses after each conversion.
    m, line = wired(ADS1115)
    clock = ManualClock()
    m.clock = clock
    write16(m, REG_HI_THRESH, 0x8000)
    write16(m, REG_LO_THRESH, 0x0000)
    write16(m, REG_CONFIG, 0x4480)  # continuous, 128 SPS, comparator on (COMP_QUE 00b)
    line.levels.clear()
    m.convert()
    assert line.levels == [False]
    clock.advance(8_000)
    assert line.levels == [False, True]


def test_disabling_the_comparator_releases_the_pin() -> None:
    m, line = wired(ADS1015)
    comparator(m, lo=100, hi=200, config=0x4404)
    m.ain0 = 1.0
    m.convert()
    assert not line.input
    write16(m, REG_CONFIG, 0x4407)  # COMP_QUE = 11b
    assert line.input


def test_reset_restores_power_on_state() -> None:
    m, line = wired(ADS1015)
    comparator(m, lo=100, hi=200, config=0x4404)
    m.ain0 = 1.0
    m.convert()
    m.reset()
    assert m.ain0 == 0.0
    assert read16(m, REG_CONFIG) == 0x8583
    assert line.input
