"""The LTR-501/559/301 model against the data sheets, without a guest.

Expected values: the LTR-559ALS-01 data sheet DS86-2013-0003 Rev. B (ALS_PS_STATUS data
and interrupt status bits, PS 11-bit data, the threshold registers' reset values and
window, INTERRUPT PERSIST's N + 1 consecutive values); the LTR-501ALS-01 facts the model
marks as from memory (part ID 80h, ALS mode 11b active, the measurement rates).
"""

from __future__ import annotations

import pytest
from helpers import RecordingLine

from roadtest.models import ModelError
from roadtest.models.ltr501 import (
    ALS_CONTR,
    ALS_MEAS_RATE,
    ALS_PS_STATUS,
    ALS_THRES_UP_0,
    INTERRUPT,
    INTERRUPT_PERSIST,
    LTR301,
    LTR501,
    LTR559,
    PART_ID,
    PS_CONTR,
    PS_DATA_0,
    PS_MEAS_RATE,
    PS_THRES_UP_0,
    LTR501Family,
    datasheet_lux,
)
from roadtest.simtime.clock import NS_PER_MS, ManualClock


def read(m: LTR501Family, reg: int, n: int = 1) -> bytes:
    m.write(bytes([reg]))
    return m.read(n)


def write(m: LTR501Family, reg: int, *values: int) -> None:
    m.write(bytes([reg, *values]))


def wired(part: type[LTR501Family]) -> tuple[LTR501Family, RecordingLine]:
    m = part()
    line = RecordingLine()
    m.irq = line
    return m, line


@pytest.mark.parametrize(("part", "part_id"), [(LTR501, 0x80), (LTR559, 0x92), (LTR301, 0x80)])
def test_identity_and_resets(part: type[LTR501Family], part_id: int) -> None:
    m = part()
    assert read(m, PART_ID)[0] == part_id
    assert read(m, 0x87)[0] == 0x05
    assert read(m, PS_THRES_UP_0, 2) == b"\xff\x07"  # PS_THRES: FFh, 07h
    assert read(m, ALS_THRES_UP_0, 4) == b"\xff\xff\x00\x00"  # ALS_THRES
    assert read(m, ALS_PS_STATUS)[0] == 0
    assert read(m, INTERRUPT_PERSIST)[0] == 0
    assert not m.als_active and not m.ps_active


def test_read_only_and_undefined_registers_refuse() -> None:
    m = LTR501()
    with pytest.raises(ModelError):
        write(m, PART_ID, 0x90)
    with pytest.raises(ModelError):
        write(m, ALS_PS_STATUS, 0)
    with pytest.raises(ModelError):
        read(m, 0x96)
    with pytest.raises(ModelError):
        read(m, 0x94)  # PS_OFFSET: the LTR-559's only
    LTR559().write(bytes([0x94]))


def test_als_measurement_sets_and_read_clears_data_status() -> None:
    m = LTR501()
    m.ch0, m.ch1 = 0x1234, 0x0567
    m.measure_als()
    assert read(m, ALS_PS_STATUS)[0] & 0x04
    # CH1 low, high, then CH0 low, high
    assert read(m, 0x88, 4) == bytes([0x67, 0x05, 0x34, 0x12])
    assert not read(m, ALS_PS_STATUS)[0] & 0x04  # OLD data after the read


def test_ps_is_eleven_bits() -> None:
    m = LTR501()
    m.ps = 0x7FF
    m.measure_ps()
    assert read(m, ALS_PS_STATUS)[0] & 0x01
    assert read(m, PS_DATA_0, 2) == b"\xff\x07"
    assert not read(m, ALS_PS_STATUS)[0] & 0x01


@pytest.mark.parametrize(("ch0", "fires"), [(99, True), (100, False), (200, False), (201, True)])
def test_als_window(ch0: int, fires: bool) -> None:
    m, line = wired(LTR501)
    write(m, ALS_THRES_UP_0, 200, 0, 100, 0)
    write(m, INTERRUPT, 0x0A)  # ALS may interrupt, active low
    m.ch0 = ch0
    m.measure_als()
    assert bool(m.status & 0x08) is fires
    assert line.input is not fires  # active low
    read(m, ALS_PS_STATUS)
    assert line.input and not m.status & 0x08  # the read released INT


def test_interrupt_status_without_the_pin() -> None:
    m, line = wired(LTR501)
    write(m, INTERRUPT, 0x08)  # neither source may interrupt
    m.ps = 0
    write(m, 0x92, 10, 0)  # PS low threshold 10
    m.measure_ps()
    assert m.status & 0x02  # the status still says so
    assert line.input


def test_persist_counts_consecutive_values() -> None:
    m, line = wired(LTR501)
    write(m, INTERRUPT, 0x0A)
    write(m, ALS_THRES_UP_0, 10, 0)
    write(m, INTERRUPT_PERSIST, 0x02)  # three consecutive values
    m.ch0 = 50
    m.measure_als()
    m.measure_als()
    assert line.input
    m.ch0 = 5  # back inside: the count starts again
    m.measure_als()
    m.ch0 = 50
    m.measure_als()
    m.measure_als()
    assert line.input
    m.measure_als()
    assert not line.input


def test_active_high_polarity() -> None:
    m, line = wired(LTR501)
    write(m, INTERRUPT, 0x0E)
    assert not line.input
    write(m, ALS_THRES_UP_0, 0, 0)
    m.ch0 = 1
    m.measure_als()
    assert line.input


@pytest.mark.parametrize(("part", "active"), [(LTR501, 0x03), (LTR559, 0x01)])
def test_modes_and_instant_measurement(part: type[LTR501Family], active: int) -> None:
    m = part()
    write(m, ALS_CONTR, active & 0x02)  # LTR-501: 10b is standby; LTR-559: 0 standby
    assert not m.als_active
    assert read(m, ALS_PS_STATUS)[0] == 0  # standby: nothing measured
    write(m, ALS_CONTR, active)
    write(m, PS_CONTR, 0x02)
    assert m.als_active and m.ps_active
    assert read(m, ALS_PS_STATUS)[0] & 0x05 == 0x05  # measured at once without sim time


def test_ltr301_has_no_proximity() -> None:
    m = LTR301()
    write(m, PS_CONTR, 0x02)
    assert not m.ps_active


def test_sw_reset() -> None:
    m = LTR501()
    write(m, ALS_MEAS_RATE, 0x12)
    write(m, ALS_CONTR, 0x04)
    assert read(m, ALS_MEAS_RATE)[0] == 0x03
    assert read(m, ALS_CONTR)[0] == 0x00


def test_ltr559_status_reports_the_gain() -> None:
    m = LTR559()
    write(m, ALS_CONTR, 0x19)  # 110b: 48X, active
    assert m.als_gain() == 48
    m.measure_als()
    assert (m.status >> 4) & 0x7 == 0b110


def test_periodic_measurements_follow_the_clock() -> None:
    m = LTR501()
    clock = ManualClock()
    m.clock = clock
    write(m, ALS_MEAS_RATE, 0x02)  # 100 ms integration, 200 ms repeat
    write(m, ALS_CONTR, 0x03)
    write(m, PS_MEAS_RATE, 0x00)  # 50 ms
    write(m, PS_CONTR, 0x02)
    assert m.als_period_ms() == 200 and m.ps_period_ms() == 50
    clock.advance(199 * NS_PER_MS)
    assert m.als_measurements == 0 and m.ps_measurements == 3
    clock.advance(NS_PER_MS)
    assert m.als_measurements == 1 and m.ps_measurements == 4
    write(m, ALS_CONTR, 0x00)
    clock.advance(1000 * NS_PER_MS)
    assert m.als_measurements == 1


def test_integration_longer_than_the_repeat_rate() -> None:
    m = LTR501()
    write(m, ALS_MEAS_RATE, 0x18)  # 400 ms integration, 50 ms repeat
    assert m.integration_ms() == 400 and m.als_period_ms() == 400


@pytest.mark.parametrize(
    ("ch0", "ch1", "lux"),
    [
        (1000, 0, 1774.3),  # ratio 0: 1.7743 CH0 + 1.1059 CH1
        (600, 400, 1.7743 * 600 + 1.1059 * 400),  # 0.40
        (500, 500, 3.7725 * 500 - 1.3363 * 500),  # 0.50
        (300, 700, 1.6903 * 300 - 0.1693 * 700),  # 0.70
        (100, 900, 0.0),  # 0.90: above 0.85
        (0, 0, 0.0),
    ],
)
def test_datasheet_lux(ch0: int, ch1: int, lux: float) -> None:
    assert datasheet_lux(ch0, ch1) == pytest.approx(lux)
