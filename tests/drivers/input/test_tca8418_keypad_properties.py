"""TCA8418 datasheet property (drivers/input/keyboard/tca8418_keypad.c): on the full 8 x 10
matrix, any sequence of key changes reaches evdev as the chip reports them (SCPS215G,
8.3.1): each key's number is R * 10 + C + 1 (the Key Event Table), each change one FIFO
entry in order, a press or release in bit 7, and a key already down (or up) makes no
event. So each scan's changes come in order, as MSC_SCAN with the matrix-keymap scan code
and EV_KEY with the keymap's code (in frames the input core may split), and the input
core's key state (EVIOCGKEY) is the set of keys the matrix holds down.
"""

from __future__ import annotations

import time

from hypothesis import given
from hypothesis import strategies as st

from roadtest.models.tca8418 import COLS, ROWS, TCA8418
from roadtest.testing import I2CDevice, RoadtestSession
from roadtest.testing.evdev import EV_KEY, EV_MSC, MSC_SCAN, EvdevDevice

ROW_SHIFT = (COLS - 1).bit_length()  # MATRIX_SCAN_CODE's shift: 4 for 10 columns


def code(row: int, col: int) -> int:
    """The keymap's code of a key: 16 (KEY_Q) on, 80 codes of input-event-codes.h."""
    return 16 + row * COLS + col


KEYMAP = " ".join(
    f"0x{row << 24 | col << 16 | code(row, col):08x}" for row in range(ROWS) for col in range(COLS)
)

FULL_KEYPAD = I2CDevice(
    compatible="ti,tca8418",
    model=TCA8418,
    gpios=("irq",),
    dts=f"""
        keypad@$addr$ {{
            compatible = "ti,tca8418";
            reg = <0x$addr$>;
            interrupt-parent = <&gpio>;
            interrupts = <$irq$ IRQ_TYPE_EDGE_FALLING>;
            keypad,num-rows = <{ROWS}>;
            keypad,num-columns = <{COLS}>;
            linux,keymap = <{KEYMAP}>;
        }};
    """,
)

CHANGE = st.tuples(st.integers(0, ROWS - 1), st.integers(0, COLS - 1), st.booleans())
# At most 10 changes a scan: the FIFO's depth, so that none overflows.
SCANS = st.lists(st.lists(CHANGE, min_size=1, max_size=10), min_size=1, max_size=4)


@given(scans=SCANS)
def test_key_changes_reach_evdev_as_the_chip_reports_them(
    guest: RoadtestSession, scans: list[list[tuple[int, int, bool]]]
) -> None:
    dev = guest.bound_for_examples(FULL_KEYPAD)
    model = dev.model

    def next_values(count: int) -> list[tuple[int, int, int]]:
        values = keypad.read_values(count)
        # The handler done with the chip (FIFO empty, K_INT cleared: its last access)
        # before the next scan; the guest runs while the agent works.
        deadline = time.monotonic() + 10.0
        while model.int_asserted:
            assert time.monotonic() < deadline, f"the handler still busy: {model.fifo()}"
            guest.sleep(0.001)
        return values

    with EvdevDevice.of(dev.path) as keypad:
        if model.pressed:  # what an earlier example left down: let go first
            held = sorted(model.pressed)
            for i in range(0, len(held), 10):  # ten at a time: the FIFO's depth
                model.keys([(row, col, False) for row, col in held[i : i + 10]])
                next_values(2 * len(held[i : i + 10]))
        down: set[tuple[int, int]] = set()
        for scan in scans:
            expected = []
            for row, col, pressed in scan:
                if ((row, col) in down) == pressed:
                    continue  # no change, no event
                if pressed:
                    down.add((row, col))
                else:
                    down.discard((row, col))
                expected += [
                    (EV_MSC, MSC_SCAN, row << ROW_SHIFT | col),
                    (EV_KEY, code(row, col), int(pressed)),
                ]
            model.keys(scan)
            if expected:
                assert next_values(len(expected)) == expected
        assert keypad.keys_down() == {code(row, col) for row, col in down}
