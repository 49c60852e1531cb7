"""TCA8418 keypad scan IC (drivers/input/keyboard/tca8418_keypad.c), against TI's datasheet
SCPS215G (revised June 2018), through the evdev ABI (include/uapi/linux/input.h).

The devicetree: the matrix-keymap binding (keypad,num-rows, keypad,num-columns,
linux,keymap: each entry MATRIX_KEY(row, column, code) of
include/dt-bindings/input/input.h, (row << 24) | (column << 16) | code) and the
tca8418 text binding of 6.12 (Documentation/devicetree/bindings/input/
tca8418_keypad.txt: "interrupts: ... should trigger on falling edge").

What the driver must report (Documentation/input/event-codes.rst): for each key change an
EV_MSC/MSC_SCAN with the scan code, then EV_KEY with the key's code and 1 (pressed) or 0
(released), and an EV_SYN/SYN_REPORT closing the frame; EVIOCGKEYCODE maps each scan code
to the keymap's code. The key the chip reports is the datasheet's key number
(R * 10 + C + 1, the Key Event Table) of the model's (row, column).
"""

from __future__ import annotations

import contextlib
import time

import pytest

from roadtest.fuzz.events import DeviceEvent, Pass, TransferFails
from roadtest.models.tca8418 import TCA8418
from roadtest.testing import BindError, BoundDevice, I2CDevice, RoadtestSession, wait_until
from roadtest.testing.evdev import (
    BUS_I2C,
    EV_KEY,
    EV_MSC,
    EV_SYN,
    MSC_SCAN,
    EvdevDevice,
    InputId,
)
from roadtest.testing.hooks import LiveHooks

# include/uapi/linux/input-event-codes.h: a telephone keypad, 4 rows by 3 columns.
KEY_1, KEY_0 = 2, 11
KEY_NUMERIC_STAR, KEY_NUMERIC_POUND = 0x20A, 0x20B
ROWS, COLS = 4, 3
KEYMAP: dict[tuple[int, int], int] = {
    **{(r, c): KEY_1 + r * COLS + c for r in range(3) for c in range(COLS)},  # 1-9
    (3, 0): KEY_NUMERIC_STAR,
    (3, 1): KEY_0,
    (3, 2): KEY_NUMERIC_POUND,
}
# The matrix-keymap scan code of a key: row << row_shift | column, row_shift the bits of
# the column count (include/linux/input/matrix_keypad.h, MATRIX_SCAN_CODE).
ROW_SHIFT = (COLS - 1).bit_length()


def scancode(row: int, col: int) -> int:
    return row << ROW_SHIFT | col


def matrix_key(row: int, col: int, code: int) -> int:
    return row << 24 | col << 16 | code


def keymap_dts(keymap: dict[tuple[int, int], int]) -> str:
    return " ".join(f"0x{matrix_key(r, c, code):08x}" for (r, c), code in keymap.items())


KEYPAD = I2CDevice(
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
            linux,keymap = <{keymap_dts(KEYMAP)}>;
        }};
    """,
)

# Registers (SCPS215G Table 9) and bits (Table 11 and the INT_STAT description).
REG_CFG, REG_KEY_EVENT_A = 0x01, 0x04
REG_KP_GPIO1, REG_KP_GPIO2, REG_KP_GPIO3 = 0x1D, 0x1E, 0x1F
REG_DEBOUNCE_DIS = (0x29, 0x2A, 0x2B)
CFG_OVR_FLOW_M, CFG_INT_CFG, CFG_KE_IEN = 0x20, 0x10, 0x01


def press(key: tuple[int, int], down: bool = True) -> list[tuple[int, int, int]]:
    """The events of one key change, as the ABI says."""
    return [(EV_MSC, MSC_SCAN, scancode(*key)), (EV_KEY, KEYMAP[key], int(down))]


def settle(guest: RoadtestSession, dev: BoundDevice[TCA8418]) -> None:
    """Let the driver's handler finish with the chip: the FIFO read empty and K_INT cleared,
    its last access (so /INT released). A key change the test makes after it then comes
    after the handler's I/O on every clock, so that a recording replays on another. The
    guest runs while the agent works, so it sleeps in the guest (a millisecond at a time:
    free under simulated time, where the guest's clock stands still between calls)."""
    deadline = time.monotonic() + 10.0
    while dev.model.int_asserted:
        assert time.monotonic() < deadline, (
            f"the handler still busy: FIFO {dev.model.fifo()}, {dev.lines['irq']!r}"
        )
        guest.sleep(0.001)


def next_frame(
    guest: RoadtestSession, keypad: EvdevDevice, dev: BoundDevice[TCA8418]
) -> list[tuple[int, int, int]]:
    """The next frame the driver reported, once its handler is done (`settle`)."""
    frame = keypad.read_frame()
    settle(guest, dev)
    return frame


def next_values(
    guest: RoadtestSession, keypad: EvdevDevice, dev: BoundDevice[TCA8418], count: int
) -> list[tuple[int, int, int]]:
    """The next `count` events but SYN_REPORTs, once the handler is done: many key changes
    may come in several frames (the input core's buffer, `EvdevDevice.read_values`)."""
    values = keypad.read_values(count)
    settle(guest, dev)
    return values


def test_probe_identity_and_capabilities(guest: RoadtestSession) -> None:
    with guest.bound(KEYPAD) as dev, EvdevDevice.of(dev.path) as keypad:
        assert keypad.name() == "tca8418"  # the I2C client's name: the compatible's part
        assert keypad.id() == InputId(BUS_I2C, 0x0001, 0x0001, 0x0001)
        assert keypad.event_types() == {EV_SYN, EV_KEY, EV_MSC}  # no keypad,autorepeat
        assert keypad.capabilities(EV_KEY) == set(KEYMAP.values())
        assert keypad.capabilities(EV_MSC) == {MSC_SCAN}
        for key, code in KEYMAP.items():
            assert keypad.keycode(scancode(*key)) == code
        assert keypad.keys_down() == set()

        # The keypad matrix is rows R0-R3 and columns C0-C2 (KP_GPIO1-3: ROW7-0, COL7-0,
        # COL9-8), and the key-event interrupt is on.
        model = dev.model
        assert model.regs[REG_KP_GPIO1] == 0x0F
        assert model.regs[REG_KP_GPIO2] == 0x07
        assert model.regs[REG_KP_GPIO3] == 0x00
        assert model.regs[REG_CFG] & CFG_KE_IEN


def test_every_key_press_and_release(guest: RoadtestSession) -> None:
    with guest.bound(KEYPAD) as dev, EvdevDevice.of(dev.path) as keypad:
        for key, code in KEYMAP.items():
            dev.model.press(*key)
            assert next_frame(guest, keypad, dev) == press(key)
            assert keypad.keys_down() == {code}
            dev.model.release(*key)
            assert next_frame(guest, keypad, dev) == press(key, down=False)
            assert keypad.keys_down() == set()


def test_simultaneous_keys_are_one_frame(guest: RoadtestSession) -> None:
    # Three keys at one scan, as for Ctrl+Alt+Del (KEY_EVENT_A-J description): three FIFO
    # entries behind one interrupt, reported in the order the chip stored them.
    keys = [(0, 0), (1, 1), (3, 2)]
    with guest.bound(KEYPAD) as dev, EvdevDevice.of(dev.path) as keypad:
        dev.model.keys([(*key, True) for key in keys])
        assert next_frame(guest, keypad, dev) == [e for key in keys for e in press(key)]
        assert keypad.keys_down() == {KEYMAP[key] for key in keys}
        dev.model.keys([(*key, False) for key in reversed(keys)])
        assert next_frame(guest, keypad, dev) == [
            e for key in reversed(keys) for e in press(key, False)
        ]
        assert keypad.keys_down() == set()


def test_a_full_fifo(guest: RoadtestSession) -> None:
    # Ten events, the FIFO's depth (8.3.1.3), read in one run of the handler: all of them,
    # in order (in two frames: the input core's buffer of values fills, and it ends one).
    keys = list(KEYMAP)[:5]
    changes = [(*key, True) for key in keys] + [(*key, False) for key in keys]
    with guest.bound(KEYPAD) as dev, EvdevDevice.of(dev.path) as keypad:
        dev.model.keys(changes)
        assert next_values(guest, keypad, dev, 20) == [
            e for row, col, down in changes for e in press((row, col), down)
        ]
        assert dev.model.lost == 0


def test_overflow_loses_the_newest_events(guest: RoadtestSession) -> None:
    """Twelve events at once: the driver leaves OVR_FLOW_M at 0, where the datasheet says
    "Overflow data is not stored and lost" (8.3.1.4). So the last two, releases here, never
    reach the input core, and their keys stay down there until pressed again: what the
    driver's choice of overflow mode means, not a misreading of the chip. The chip sets
    OVR_FLOW_INT, which the driver's handler sees beside K_INT and warns about."""
    keys = list(KEYMAP)[:6]
    changes = [(*key, True) for key in keys] + [(*key, False) for key in keys]
    with guest.bound(KEYPAD) as dev, EvdevDevice.of(dev.path) as keypad:
        assert not dev.model.regs[REG_CFG] & CFG_OVR_FLOW_M
        dev.model.keys(changes)
        assert next_values(guest, keypad, dev, 20) == [
            e for row, col, down in changes[:10] for e in press((row, col), down)
        ]
        assert dev.model.lost == 2
        guest.assert_kernel_log(r"tca8418_keypad .*: overflow occurred")
        assert keypad.keys_down() == {KEYMAP[keys[4]], KEYMAP[keys[5]]}
        # Pressing and releasing them brings the input core back in step. It passes on key
        # changes only (drivers/input/input.c, input_handle_event()): the press of a key it
        # holds down is the scan code alone.
        for key in keys[4:]:
            dev.model.press(*key)
            assert next_frame(guest, keypad, dev) == press(key)[:1]
            dev.model.release(*key)
            assert next_frame(guest, keypad, dev) == press(key, down=False)
        assert keypad.keys_down() == set()


class PressDuringHandler(TCA8418):
    """A key pressed just as the driver finds the FIFO empty: after its last read of
    KEY_EVENT_A and before it clears K_INT."""

    def __init__(self) -> None:
        self.late_key: tuple[int, int] | None = None
        super().__init__()

    def reg_read(self, addr: int) -> int:
        with self._lock:
            value = super().reg_read(addr)
            if addr == REG_KEY_EVENT_A and value == 0 and self.late_key is not None:
                key, self.late_key = self.late_key, None
                self.press(*key)
            return value


def test_a_key_during_the_handler_is_not_lost(guest: RoadtestSession) -> None:
    """K_INT cannot be cleared while the FIFO holds an event, and with INT_CFG = 1 the chip
    releases /INT for 50 us and asserts it again (Table 11): a new falling edge, which the
    driver's edge interrupt needs to come back for the late key. With INT_CFG = 0 /INT
    would stay low and the key would wait for the next one's interrupt."""
    model = PressDuringHandler()
    with guest.bound(KEYPAD, model) as dev:
        assert model.regs[REG_CFG] & CFG_INT_CFG
        with EvdevDevice.of(dev.path) as keypad:
            model.late_key = (2, 2)
            model.press(0, 1)
            assert next_frame(guest, keypad, dev) == press((0, 1))
            assert next_frame(guest, keypad, dev) == press((2, 2))
            assert model.late_key is None
            assert keypad.keys_down() == {KEYMAP[(0, 1)], KEYMAP[(2, 2)]}


def test_keys_outside_the_matrix_make_no_event(guest: RoadtestSession) -> None:
    # Row 4 and column 3 are not in the keypad matrix the driver configured: the chip
    # does not scan them. The next event is the in-matrix key's.
    with guest.bound(KEYPAD) as dev, EvdevDevice.of(dev.path) as keypad:
        dev.model.press(4, 0)
        dev.model.press(0, 3)
        dev.model.press(3, 1)
        assert next_frame(guest, keypad, dev) == press((3, 1))
        assert not keypad.pending()


def scripted(guest: RoadtestSession, script: list[DeviceEvent]) -> contextlib.ExitStack:
    """`guest.device_events(script)` for devices attached in the block, run live: left out
    of a recording. (A replay wraps the script around the player, which never sees the
    scripted failures it recorded: the player then reports the driver stopping early.)"""
    stack = contextlib.ExitStack()
    stack.enter_context(guest.hooks_wrapped(lambda inner: LiveHooks()))
    stack.enter_context(guest.device_events(script))
    return stack


def test_probe_fails_without_the_chip(guest: RoadtestSession) -> None:
    # The first transfer, the read of KEY_LCK_EC, is NACKed: no device, no input device.
    with pytest.raises(BindError):
        with scripted(guest, [TransferFails(0)]), guest.bound(KEYPAD):
            pass


@pytest.mark.parametrize("failing", [1, 4, 7], ids=["KP_GPIO1", "DEBOUNCE_DIS1", "CFG"])
def test_probe_fails_when_configuring_fails(guest: RoadtestSession, failing: int) -> None:
    # Probe: the KEY_LCK_EC read, the KP_GPIO1-3 and DEBOUNCE_DIS1-3 writes, then CFG: the
    # first write, the first of the second three, and the last failing fail the probe.
    with pytest.raises(BindError):
        with scripted(guest, [Pass(failing), TransferFails(0)]), guest.bound(KEYPAD):
            pass


def test_probe_leaves_debouncing_on(guest: RoadtestSession) -> None:
    # DEBOUNCE_DIS1-3 (29h-2Bh, Table 9) are the debounce *disable* registers: a 1 turns
    # a pin's 50 us debounce off; their reset value, 0, leaves it on for every pin.
    with guest.bound(KEYPAD) as dev:
        for reg in REG_DEBOUNCE_DIS:
            assert dev.model.regs[reg] == 0x00, f"DEBOUNCE_DIS{reg - 0x28}"


def test_a_failed_status_read_does_not_stop_the_keypad(guest: RoadtestSession) -> None:
    # Probe makes 8 transfers; the 9th is the handler's read of INT_STAT.
    with scripted(guest, [Pass(8), TransferFails(0)]), guest.bound(KEYPAD) as dev:
        line = dev.lines["irq"]
        fired = line.interrupts
        with EvdevDevice.of(dev.path) as keypad:
            dev.model.press(0, 0)
            wait_until(lambda: line.interrupts > fired, "the keypad's interrupt")
            guest.sleep(0.01)  # the guest runs its handler while the agent works
            guest.assert_kernel_log(r"unable to read REG_INT_STAT")
            dev.model.press(1, 1)
            # What must follow: both keys' events (in one frame or two, as the second key
            # finds the handler), and the FIFO drained and /INT released.
            assert next_values(guest, keypad, dev, 4) == press((0, 0)) + press((1, 1))


def test_unbind(guest: RoadtestSession) -> None:
    with guest.bound(KEYPAD) as dev:
        node = EvdevDevice.of(dev.path).node
        assert node.exists()
    assert not (dev.path / "input").exists()
    assert not node.exists()
