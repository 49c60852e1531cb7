"""The PCA9633/PCA9634/PCA9635 model against NXP's data sheets, without a guest.

Expected values are the data sheets' (PCA9633 Rev. 05 and the family's tables, as the
model's docstring says): power-up register values, the Control register's pointer and
Auto-Increment options with their roll-over points (Table 6), LEDOUT's four states, the
blink period (GFRQ + 1) / 24 s and duty GDC / 256, OCH, SLEEP's 500 us start-up.
"""

from __future__ import annotations

import pytest

from roadtest.models import ModelError
from roadtest.models.pca963x import PCA9633, PCA9634, PCA9635, PCA963x, ledout_value
from roadtest.simtime.clock import ManualClock

CHIPS = [PCA9633, PCA9634, PCA9635]

# (class, PWM0, GRPPWM, GRPFREQ, LEDOUT0, SUBADR1, ALLCALLADR): PCA9633 Table 7 and the
# PCA9634/PCA9635 register summaries.
ADDRESSES = [
    (PCA9633, 0x02, 0x06, 0x07, 0x08, 0x09, 0x0C),
    (PCA9634, 0x02, 0x0A, 0x0B, 0x0C, 0x0E, 0x11),
    (PCA9635, 0x02, 0x12, 0x13, 0x14, 0x18, 0x1B),
]


def read(m: PCA963x, control: int, length: int = 1) -> bytes:
    """A host read: the Control byte written, then `length` bytes read (one transfer)."""
    m.start_transfer()
    m.write(bytes([control]))
    data = m.read(length)
    m.end_transfer()
    return data


def write(m: PCA963x, control: int, *values: int) -> None:
    m.start_transfer()
    m.write(bytes([control, *values]))
    m.end_transfer()


@pytest.mark.parametrize(
    ("cls", "pwm0", "grppwm", "grpfreq", "ledout0", "subadr1", "allcall"), ADDRESSES
)
def test_power_up_values(
    cls: type[PCA963x],
    pwm0: int,
    grppwm: int,
    grpfreq: int,
    ledout0: int,
    subadr1: int,
    allcall: int,
) -> None:
    m = cls()
    channels = m.chip.channels
    assert (m.chip.pwm0, m.chip.grppwm, m.chip.grpfreq) == (pwm0, grppwm, grpfreq)
    assert (m.chip.ledout0, m.chip.subadr1, m.chip.allcalladr) == (ledout0, subadr1, allcall)
    # Auto-Increment for all registers (AI = 100) from 00h: the whole register file.
    values = read(m, 0x80, allcall + 1)
    expected = [0x91, 0x05] + [0x00] * channels + [0xFF, 0x00] + [0x00] * (channels // 4)
    expected += [0xE2, 0xE4, 0xE8, 0xE0]
    assert list(values) == expected
    assert m.sleeping
    assert all(o.state == "off" and not o.lit for o in m.outputs())
    # Then it rolled over to 00h (Table 6: 'roll over to 0000 after the last register').
    assert m.pointer == 0


def test_mode1_reads_back_the_control_registers_auto_increment_bits() -> None:
    m = PCA9633()
    assert read(m, 0x00) == bytes([0x11])  # AI = 000 in the Control byte of this read
    assert read(m, 0xA0) == bytes([0xB1])  # AI = 101
    write(m, 0x00, 0xE0)  # AI2..AI0 are read-only: the write changes SLEEP and ALLCALL only
    assert read(m, 0x00) == bytes([0x00])


@pytest.mark.parametrize("cls", CHIPS)
def test_no_auto_increment_stays_on_one_register(cls: type[PCA963x]) -> None:
    m = cls()
    pwm1 = m.chip.pwm(1)
    write(m, pwm1, 0x10, 0x20, 0x30)  # 'data is overwritten each time'
    assert m.regs[pwm1] == 0x30
    assert m.regs[m.chip.pwm(2)] == 0x00
    assert m.reg_writes(pwm1) == [0x10, 0x20, 0x30]
    assert read(m, pwm1, 2) == bytes([0x30, 0x30])


def roll(m: PCA963x, control: int, count: int) -> list[int]:
    """The registers `count` written bytes land on, from the Control byte `control`."""
    m.reset_reg_writes()
    write(m, control, *range(count))
    return [reg for reg, _ in m.all_reg_writes()]


@pytest.mark.parametrize("cls", CHIPS)
def test_auto_increment_options(cls: type[PCA963x]) -> None:
    m = cls()
    chip = m.chip
    last_pwm = chip.grppwm - 1
    # 101: the brightness registers only, rolling over to PWM0 after the last PWMx.
    assert roll(m, 0xA0 | last_pwm, 3) == [last_pwm, chip.pwm0, chip.pwm0 + 1]
    # 110: GRPPWM and GRPFREQ only.
    assert roll(m, 0xC0 | chip.grppwm, 3) == [chip.grppwm, chip.grpfreq, chip.grppwm]
    # 111: brightness and global registers, rolling over to PWM0 after GRPFREQ.
    assert roll(m, 0xE0 | chip.grpfreq, 2) == [chip.grpfreq, chip.pwm0]
    # 100: every register, rolling over to MODE1 after ALLCALLADR.
    assert roll(m, 0x80 | chip.allcalladr, 2) == [chip.allcalladr, 0x00]


@pytest.mark.parametrize("control", [0x20, 0x40, 0x60])
def test_reserved_auto_increment_options_are_refused(control: int) -> None:
    with pytest.raises(ModelError, match="reserved"):
        write(PCA9634(), control | 0x02, 0x01)


def test_pca9633_control_bit_4_must_be_zero() -> None:
    with pytest.raises(ModelError, match="bit 4"):
        write(PCA9633(), 0x12, 0x01)
    # On the PCA9634 and PCA9635 bit 4 is the pointer's D4.
    m = PCA9635()
    write(m, 0x12, 0x7F)
    assert m.regs[0x12] == 0x7F  # GRPPWM


@pytest.mark.parametrize(("cls", "reserved"), [(PCA9633, 0x0D), (PCA9634, 0x12), (PCA9635, 0x1C)])
def test_registers_past_allcalladr_are_refused(cls: type[PCA963x], reserved: int) -> None:
    with pytest.raises(ModelError, match="undefined"):
        read(cls(), reserved)
    with pytest.raises(ModelError, match="undefined"):
        write(cls(), reserved, 0)


def test_read_only_bits() -> None:
    m = PCA9634()
    write(m, 0x01, 0xFF)  # MODE2 bits 7..6 are reserved, read-only 0
    assert m.regs[0x01] == 0x3F
    write(m, m.chip.subadr1, 0xFF)  # a subaddress's bit 0 is read-only 0
    assert m.regs[m.chip.subadr1] == 0xFE


@pytest.mark.parametrize("cls", CHIPS)
def test_ledout_states(cls: type[PCA963x]) -> None:
    m = cls()
    write(m, 0x00, 0x00)  # wake
    chip = m.chip
    write(m, chip.pwm(1), 0x80)
    write(m, chip.pwm(2), 0x40)
    write(m, chip.pwm(3), 0xFF)
    write(m, chip.ledout0, ledout_value([0b01, 0b10, 0b11, 0b00]))
    assert [o.state for o in m.outputs()[:4]] == ["on", "pwm", "group", "off"]
    assert m.output(0).pwm == 1.0 and m.output(0).lit
    assert m.output(1).pwm == 0x80 / 256  # 7.3.3: duty = PWMx / 256
    assert m.output(2).group_dim == 0xFF / 256  # GRPPWM's power-up FFh, dimming
    assert not m.output(3).lit
    # The last output's bits are the top two of the last LEDOUT register.
    last = chip.channels - 1
    write(m, chip.ledout0 + chip.ledouts - 1, 0b01 << 6)
    assert m.output(last).state == "on"


@pytest.mark.parametrize(("gfrq", "period"), [(0x00, 1 / 24), (0x17, 1.0), (0xFF, 256 / 24)])
def test_blink_period_and_duty(gfrq: int, period: float) -> None:
    # 7.3.5: period = (GFRQ + 1) / 24 s; 7.3.4: duty cycle = GDC / 256 in blink mode.
    m = PCA9635()
    chip = m.chip
    write(m, 0x00, 0x00)
    write(m, 0x01, 0x05 | 0x20)  # DMBLNK
    write(m, chip.grpfreq, gfrq)
    write(m, chip.grppwm, 0x40)
    write(m, chip.pwm(5), 0xFF)
    write(m, chip.ledout(5)[0], 0b11 << chip.ledout(5)[1])
    out = m.output(5)
    assert out.blink_period_s == pytest.approx(period)
    assert out.blink_on == 0x40 / 256
    assert out.group_dim is None
    assert out.lit
    write(m, chip.grppwm, 0x00)  # 0 % duty: never on
    assert not m.output(5).lit


def test_outputs_change_at_the_stop_unless_och() -> None:
    m = PCA9633()
    write(m, 0x00, 0x00)
    m.start_transfer()
    m.write(bytes([0x08, 0x01]))  # LEDOUT: output 0 on
    assert m.output(0).state == "off"  # OCH = 0: not before the STOP
    m.end_transfer()
    assert m.output(0).state == "on"
    write(m, 0x01, 0x05 | 0x08)  # OCH = 1: outputs change on ACK
    m.start_transfer()
    m.write(bytes([0x08, 0x00]))
    assert m.output(0).state == "off"
    m.end_transfer()


def test_oscillator_start_up() -> None:
    m = PCA9633()
    clock = ManualClock()
    m.clock = clock
    write(m, 0x02, 0x80)  # PWM0, while asleep
    write(m, 0x08, 0b10)  # LEDOUT: PWM
    assert not m.output(0).lit  # 'no blinking or dimming is possible when the oscillator is off'
    clock.advance(1_000_000)
    write(m, 0x00, 0x00)  # SLEEP cleared
    assert not m.oscillating
    clock.advance(100_000)
    write(m, 0x03, 0x10)  # PWM1 inside the 500 us window
    assert m.early_accesses == [("PWM1", 100_000)]
    clock.advance(400_000)
    assert m.oscillating and m.output(0).lit
    write(m, 0x03, 0x20)
    assert m.early_accesses == [("PWM1", 100_000)]


def test_output_drive_and_inversion() -> None:
    m = PCA9634()
    assert m.totem_pole and not m.inverted  # MODE2 05h
    write(m, 0x01, 0x10)
    assert not m.totem_pole and m.inverted


def test_call_addresses() -> None:
    m = PCA9634()
    assert m.call_addresses() == {0x70}  # ALLCALL = 1, ALLCALLADR E0h
    write(m, 0x00, 0x08 | 0x02)  # SUB1 and SUB3, no ALLCALL
    assert m.call_addresses() == {0x71, 0x74}
    write(m, m.chip.subadr1, 0x90)
    assert m.call_addresses() == {0x48, 0x74}


def test_reset_restores_the_power_on_state() -> None:
    m = PCA9634()
    write(m, 0xA2, 1, 2, 3)
    m.reset()
    assert m.control == 0x80 and m.regs[0x02] == 0 and m.all_reg_writes() == []
