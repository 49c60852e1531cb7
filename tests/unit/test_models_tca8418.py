"""The TCA8418 model against its datasheet (SCPS215G), without a guest.

Expected values are the datasheet's: the Key Event Table's numbering (R * 10 + C + 1), the
KEY_EVENT_A encoding (bit 7 press, bits 6:0 the key) and the FIFO reading example of
8.3.1.3, the overflow table of 8.3.1.4, INT_STAT's write-1-to-clear bits and /INT.
"""

from __future__ import annotations

import pytest

from roadtest.models import ModelError
from roadtest.models.tca8418 import TCA8418, event_byte, key_number, key_position
from roadtest.simtime.clock import INSTANT, ManualClock

REG_CFG, REG_INT_STAT, REG_KEY_LCK_EC, REG_KEY_EVENT_A, REG_KEY_EVENT_B = 1, 2, 3, 4, 5
REG_KP_GPIO1, REG_KP_GPIO2, REG_KP_GPIO3, REG_GPI_EM1 = 0x1D, 0x1E, 0x1F, 0x20
AI, OVR_FLOW_M, INT_CFG, OVR_FLOW_IEN, KE_IEN = 0x80, 0x20, 0x10, 0x08, 0x01
K_INT, OVR_FLOW_INT = 0x01, 0x08


def read(m: TCA8418, reg: int, length: int = 1) -> bytes:
    m.write(bytes([reg]))
    return m.read(length)


def read8(m: TCA8418, reg: int) -> int:
    return read(m, reg)[0]


def write8(m: TCA8418, reg: int, value: int) -> None:
    m.write(bytes([reg, value]))


def keypad(m: TCA8418, rows: int = 0xFF, cols: int = 0x3FF, cfg: int = KE_IEN) -> None:
    write8(m, REG_KP_GPIO1, rows)
    write8(m, REG_KP_GPIO2, cols & 0xFF)
    write8(m, REG_KP_GPIO3, cols >> 8)
    write8(m, REG_CFG, cfg)


def by_number(m: TCA8418, number: int, pressed: bool) -> None:
    row, col = key_position(number)
    m.keys([(row, col, pressed)])


def test_every_register_resets_to_zero() -> None:
    # Table 9: "The default value in all registers is 0"; 00h is reserved.
    m = TCA8418()
    for reg in range(0x01, 0x2F):
        assert read8(m, reg) == 0, hex(reg)
    with pytest.raises(ModelError):
        read8(m, 0x00)
    with pytest.raises(ModelError):
        read8(m, 0x2F)
    assert not m.int_asserted


def test_key_numbers_are_the_key_event_table() -> None:
    assert key_number(0, 0) == 1
    assert key_number(0, 9) == 10
    assert key_number(1, 0) == 11
    assert key_number(3, 1) == 32
    assert key_number(7, 9) == 80
    assert [key_position(n) for n in (1, 10, 11, 45, 80)] == [
        (0, 0),
        (0, 9),
        (1, 0),
        (4, 4),
        (7, 9),
    ]
    with pytest.raises(ValueError):
        key_number(8, 0)
    with pytest.raises(ValueError):
        key_number(0, 10)
    assert event_byte(0, 0, True) == 0x81
    assert event_byte(3, 1, False) == 0x20


def test_fifo_reading_example() -> None:
    # 8.3.1.3's example: ten events, KEC 10, then each read of KEY_EVENT_A pops one.
    m = TCA8418()
    keypad(m)
    for number, pressed in [
        (1, True),
        (32, True),
        (1, False),
        (32, False),
        (23, True),
        (23, False),
        (45, True),
        (41, True),
        (41, False),
        (45, False),
    ]:
        by_number(m, number, pressed)
    assert read8(m, REG_KEY_LCK_EC) == 10
    assert read8(m, REG_KEY_EVENT_B) == 0xA0  # B shows the next one, and does not pop
    expected = [0x81, 0xA0, 0x01, 0x20, 0x97, 0x17, 0xAD, 0xA9, 0x29, 0x2D]
    for left, event in zip(range(9, -1, -1), expected, strict=True):
        assert read8(m, REG_KEY_EVENT_A) == event
        assert read8(m, REG_KEY_LCK_EC) & 0x0F == left
    assert read8(m, REG_KEY_EVENT_A) == 0x00  # empty


def test_k_int_and_int_pin() -> None:
    m = TCA8418()
    keypad(m)
    assert not m.int_asserted
    m.press(2, 3)
    assert read8(m, REG_INT_STAT) == K_INT
    assert m.int_asserted
    # Not cleared while the FIFO holds events.
    write8(m, REG_INT_STAT, K_INT)
    assert read8(m, REG_INT_STAT) == K_INT and m.int_asserted
    assert read8(m, REG_KEY_EVENT_A) == 0x80 | 24
    write8(m, REG_INT_STAT, 0x00)  # a 0 clears nothing
    assert read8(m, REG_INT_STAT) == K_INT
    write8(m, REG_INT_STAT, 0xFF)
    assert read8(m, REG_INT_STAT) == 0 and not m.int_asserted


def test_ke_ien_gates_the_pin_not_the_status() -> None:
    m = TCA8418()
    keypad(m, cfg=0)
    m.press(0, 0)
    assert read8(m, REG_INT_STAT) == K_INT
    assert not m.int_asserted
    write8(m, REG_CFG, KE_IEN)
    assert m.int_asserted


def test_int_cfg_pulses_int_when_a_pending_interrupt_is_cleared() -> None:
    # Table 11: INT_CFG = 1, /INT deasserted for 50 us and asserted again while pending.
    m = TCA8418()
    clock = ManualClock()
    m.clock = clock
    keypad(m, cfg=INT_CFG | KE_IEN)
    m.press(0, 0)
    m.release(0, 0)
    assert read8(m, REG_KEY_EVENT_A) == 0x81
    write8(m, REG_INT_STAT, K_INT)  # one event left
    assert not m.int_asserted
    clock.advance(49_000)
    assert not m.int_asserted
    clock.advance(1_000)
    assert m.int_asserted
    # INT_CFG = 0: stays asserted.
    write8(m, REG_CFG, KE_IEN)
    write8(m, REG_INT_STAT, K_INT)
    assert m.int_asserted and not clock.pending


def test_int_cfg_without_simulated_time_reasserts_at_once() -> None:
    m = TCA8418()
    assert m.clock is INSTANT
    keypad(m, cfg=INT_CFG | KE_IEN)
    m.keys([(0, 0, True), (0, 0, False)])
    write8(m, REG_INT_STAT, K_INT)
    assert m.int_asserted


def test_keys_outside_the_matrix_are_not_scanned() -> None:
    m = TCA8418()
    keypad(m, rows=0b0011, cols=0b0111)  # R0-R1, C0-C2
    m.press(2, 0)
    m.press(0, 3)
    assert m.fifo() == [] and not m.int_asserted
    m.press(1, 2)
    assert m.fifo() == [0x80 | 13]
    keypad(m, rows=0x01, cols=0x200)  # C9 is KP_GPIO3 bit 1
    m.press(0, 9)
    assert m.fifo() == [0x80 | 13, 0x80 | 10]


def test_repeated_press_is_no_change() -> None:
    m = TCA8418()
    keypad(m)
    m.press(0, 0)
    m.press(0, 0)
    m.release(1, 1)
    assert m.fifo() == [0x81]
    assert m.pressed == {(0, 0)}


def test_overflow_mode_off_loses_the_new_event() -> None:
    # 8.3.1.4: OVR_FLOW_M = 0, the overflowing event is not stored; OVR_FLOW_INT set, but
    # no overflow interrupt without OVR_FLOW_M (CFG description).
    m = TCA8418()
    keypad(m, cfg=OVR_FLOW_IEN)
    m.keys([(0, c, True) for c in range(10)])
    m.press(1, 1)
    assert len(m.fifo()) == 10 and m.fifo()[-1] == 0x80 | 10 and m.lost == 1
    assert read8(m, REG_INT_STAT) == K_INT | OVR_FLOW_INT
    assert not m.int_asserted


def test_overflow_mode_on_pushes_the_oldest_out() -> None:
    m = TCA8418()
    keypad(m, cfg=OVR_FLOW_M | OVR_FLOW_IEN)
    m.keys([(0, c, True) for c in range(10)])
    m.release(0, 0)
    assert m.fifo() == [0x80 | n for n in range(2, 11)] + [0x01]
    assert m.int_asserted  # OVR_FLOW_INT with OVR_FLOW_IEN and OVR_FLOW_M
    assert read8(m, REG_KEY_LCK_EC) == 10


def test_auto_increment() -> None:
    m = TCA8418()
    keypad(m)
    m.keys([(0, 0, True), (0, 1, True), (0, 2, True)])
    # AI = 0: three bytes from KEY_EVENT_A are three pops.
    assert read(m, REG_KEY_EVENT_A, 3) == bytes([0x81, 0x82, 0x83])
    write8(m, REG_CFG, AI | KE_IEN)
    m.press(1, 0)
    assert read(m, REG_KEY_LCK_EC, 2) == bytes([1, 0x80 | 11])  # KEY_LCK_EC, then A
    m.write(bytes([REG_KP_GPIO1, 0x0F, 0x03]))  # AI: KP_GPIO1 then KP_GPIO2
    assert (read8(m, REG_KP_GPIO1), read8(m, REG_KP_GPIO2)) == (0x0F, 0x03)
    write8(m, REG_CFG, KE_IEN)
    m.write(bytes([REG_KP_GPIO1, 0x01, 0x07]))  # AI = 0: both to KP_GPIO1
    assert (read8(m, REG_KP_GPIO1), read8(m, REG_KP_GPIO2)) == (0x07, 0x03)


def test_refused_accesses() -> None:
    m = TCA8418()
    with pytest.raises(ModelError, match="read-only"):
        write8(m, REG_KEY_EVENT_A, 0x81)
    with pytest.raises(ModelError, match="keypad lock"):
        write8(m, REG_KEY_LCK_EC, 0x40)
    with pytest.raises(ModelError, match="GPI events"):
        write8(m, REG_GPI_EM1, 0x01)
    write8(m, REG_KEY_LCK_EC, 0x0F)  # KEC is read-only: the count stays
    assert read8(m, REG_KEY_LCK_EC) == 0
    write8(m, REG_KP_GPIO3, 0xFF)  # bits 7:2 are not used
    assert read8(m, REG_KP_GPIO3) == 0x03


def test_reset() -> None:
    m = TCA8418()
    keypad(m)
    m.press(0, 0)
    m.reset()
    assert m.fifo() == [] and m.pressed == set() and not m.int_asserted
    assert read8(m, REG_KP_GPIO1) == 0
