"""TI TCA8418 I2C keypad scan IC (datasheet SCPS215G, September 2009, revised June 2018).

An 8-row by 10-column key matrix (ROW0-7, COL0-9) scanned by the chip, a 10-event key
FIFO, 8-bit registers 01h-2Eh (8.6, Table 9: "The default value in all registers is 0";
00h is reserved) and an open-drain, active-low /INT output (1 Features; 8.3.5).

From the datasheet:

- Key numbers (8.3.1.1, Key Event Table): the key at row R, column C of the matrix is
  number R * 10 + C + 1 in decimal, 1 (R0/C0) to 80 (R7/C9). 97-114 are GPI events
  (8.3.1.2), not modelled.
- KEY_EVENT_A-J (04h-0Dh) are a FIFO of up to 10 events: bits 6:0 the key number, bit 7
  1 for a press and 0 for a release. Each read of KEY_EVENT_A returns the oldest event,
  the count in KEY_LCK_EC[3:0] goes down by 1, and the others move down one place (J to
  A). B-J can be read and show the FIFO's later entries without popping it.
  (8.3.1.3 and the KEY_EVENT_A-J register description; the example table there.)
- KEY_LCK_EC (03h): KEC[3:0] the number of events in the FIFO; LCK1/LCK2 (bits 4, 5) the
  lock state, K_LCK_EN (bit 6).
- INT_STAT (02h): K_INT (0), GPI_INT (1), K_LCK_INT (2), OVR_FLOW_INT (3), CAD_INT (4),
  each cleared by writing 1 to it. K_INT is set when a key event enters the FIFO, and
  "the K_INT bit and /INT pin will not [be] cleared until the FIFO is cleared of all
  events" (KEY_EVENT_A-J description).
- CFG (01h): AI (7, auto-increment of the register address), GPI_E_CFG (6),
  OVR_FLOW_M (5), INT_CFG (4), OVR_FLOW_IEN (3), K_LCK_IEN (2), GPI_IEN (1), KE_IEN (0).
  INT_CFG = 1: "processor interrupt is deasserted for 50 us and reassert[ed] with pending
  interrupts" when the host clears an interrupt that is still pending; INT_CFG = 0: it
  "remains asserted" (Table 11, 8.3.5.1). /INT is asserted while K_INT is set with KE_IEN.
- Overflow (8.3.1.4): an event that comes while the FIFO holds 10 is lost with
  OVR_FLOW_M = 0 (the default); with OVR_FLOW_M = 1 it goes in and the oldest is pushed
  out. OVR_FLOW_INT is set either way; "For overflow to be enabled, both Bit_3 and Bit_5
  of the Configuration Register must be set High. If only Bit_3 set high, no overflow
  interrupt is generated" (CFG description): the model asserts /INT for an overflow only
  with OVR_FLOW_IEN and OVR_FLOW_M both set. (The "Overflow Errata" section that sentence
  points to was not at hand: this is a reading of the two statements, not a check.)
- KP_GPIO1-3 (1Dh-1Fh): a 1 puts the pin in the keypad matrix: KP_GPIO1 bits 7:0 are
  ROW7-ROW0, KP_GPIO2 bits 7:0 COL7-COL0, KP_GPIO3 bits 1:0 COL9-COL8 (8.3.1, Table 9).
  Only keys whose row and column are both in the matrix are scanned.
- DEBOUNCE_DIS1-3 (29h-2Bh), the debounce *disable* registers (Table 9's name), reset 0:
  a 1 turns a pin's 50 us debounce (1 Features) off. The model stores them; with no
  bounce modelled they change nothing.

From memory (not checked against a page here, so said): which INT_STAT and KEY_LCK_EC bits
the chip lets a host write (the model takes KEC, LCK1 and LCK2 as read-only, the FIFO
registers as read-only, since the datasheet says what a write to them does nowhere);
that a read of KEY_EVENT_A with the FIFO empty returns 00h; that the status bits are set
whatever the interrupt enables, which gate only /INT; the meanings of the GPIO registers
(11h-2Eh), which the model stores without acting on them.

Simplified and not modelled: scan timing and the 50 us debounce (an event enters the FIFO
when the test presses or releases the key); the keypad lock and its unlock keys, timers
and K_LCK_INT (a driver that sets K_LCK_EN is refused with a ModelError); Ctrl-Alt-Del
(CAD_INT); GPI events and GPIO input and output levels (GPIO_INT_STAT and GPIO_DAT_STAT
read 0; GPI_EM bits are refused). With AI = 0 a read or write of several bytes accesses
the same register again (KEY_EVENT_A: pops again); with AI = 1 it moves to the next.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Final

from roadtest.models.base import ModelError
from roadtest.models.interrupt import Drive, InterruptPin, Polarity
from roadtest.models.regmap import (
    RO,
    RW,
    W1C,
    Access,
    Field,
    MappedSMBusModel,
    Register,
    RegisterMap,
)

ROWS: Final = 8
COLS: Final = 10
FIFO_DEPTH: Final = 10
INT_DEASSERT_NS: Final = 50_000  # INT_CFG = 1: /INT released for 50 us (Table 11)

# CFG (01h)
AI: Final = Field("AI", 7)
GPI_E_CFG: Final = Field("GPI_E_CFG", 6)
OVR_FLOW_M: Final = Field("OVR_FLOW_M", 5)
INT_CFG: Final = Field("INT_CFG", 4)
OVR_FLOW_IEN: Final = Field("OVR_FLOW_IEN", 3)
K_LCK_IEN: Final = Field("K_LCK_IEN", 2)
GPI_IEN: Final = Field("GPI_IEN", 1)
KE_IEN: Final = Field("KE_IEN", 0)

# INT_STAT (02h): bits 7:5 are not used and read 0.
CAD_INT: Final = Field("CAD_INT", 4)
OVR_FLOW_INT: Final = Field("OVR_FLOW_INT", 3)
K_LCK_INT: Final = Field("K_LCK_INT", 2)
GPI_INT: Final = Field("GPI_INT", 1)
K_INT: Final = Field("K_INT", 0)

# KEY_LCK_EC (03h)
K_LCK_EN: Final = Field("K_LCK_EN", 6)
LCK2: Final = Field("LCK2", 5, access=RO)
LCK1: Final = Field("LCK1", 4, access=RO)
KEC: Final = Field("KEC", 3, 0, access=RO)

# KEY_EVENT_A-J
EVENT_PRESS: Final = 0x80
EVENT_KEY: Final = 0x7F


def _unused(msb: int, lsb: int) -> Field:
    return Field("NA", msb, lsb, reserved=True)


def _triple(name: str, address: int, access: Access = RW) -> list[Register]:
    """Registers NAME1-3 of the 18 pins: 1 holds ROW7-0, 2 COL7-0, 3 COL9-8 in bits 1:0."""
    return [
        Register(
            f"{name}{i + 1}", address + i, 0x00, access, fields=(_unused(7, 2),) if i == 2 else ()
        )
        for i in range(3)
    ]


REGISTERS: Final = RegisterMap(
    [
        Register(
            "CFG",
            0x01,
            0x00,
            fields=(AI, GPI_E_CFG, OVR_FLOW_M, INT_CFG, OVR_FLOW_IEN, K_LCK_IEN, GPI_IEN, KE_IEN),
        ),
        Register(
            "INT_STAT",
            0x02,
            0x00,
            W1C,
            fields=(_unused(7, 5), CAD_INT, OVR_FLOW_INT, K_LCK_INT, GPI_INT, K_INT),
        ),
        Register("KEY_LCK_EC", 0x03, 0x00, fields=(_unused(7, 7), K_LCK_EN, LCK2, LCK1, KEC)),
        *(Register(f"KEY_EVENT_{'ABCDEFGHIJ'[i]}", 0x04 + i, 0x00, RO) for i in range(10)),
        Register("KP_LCK_TIMER", 0x0E, 0x00),
        Register("UNLOCK1", 0x0F, 0x00),
        Register("UNLOCK2", 0x10, 0x00),
        *_triple("GPIO_INT_STAT", 0x11, RO),
        *_triple("GPIO_DAT_STAT", 0x14, RO),
        *_triple("GPIO_DAT_OUT", 0x17),
        *_triple("GPIO_INT_EN", 0x1A),
        *_triple("KP_GPIO", 0x1D),
        *_triple("GPI_EM", 0x20),
        *_triple("GPIO_DIR", 0x23),
        *_triple("GPIO_INT_LVL", 0x26),
        *_triple("DEBOUNCE_DIS", 0x29),
        *_triple("GPIO_PULL", 0x2C),
    ],
    width=8,
)
CFG: Final = REGISTERS["CFG"]
INT_STAT: Final = REGISTERS["INT_STAT"]
KEY_LCK_EC: Final = REGISTERS["KEY_LCK_EC"]
KEY_EVENT_A: Final = REGISTERS["KEY_EVENT_A"]
KEY_EVENT_J: Final = REGISTERS["KEY_EVENT_J"]
KP_GPIO1: Final = REGISTERS["KP_GPIO1"]
KP_GPIO2: Final = REGISTERS["KP_GPIO2"]
KP_GPIO3: Final = REGISTERS["KP_GPIO3"]
GPI_EM: Final = (REGISTERS["GPI_EM1"], REGISTERS["GPI_EM2"], REGISTERS["GPI_EM3"])


def key_number(row: int, col: int) -> int:
    """The datasheet's key number of the key at `row`, `col` (Key Event Table)."""
    if not (0 <= row < ROWS and 0 <= col < COLS):
        raise ValueError(f"no key at row {row}, column {col}: the matrix is {ROWS} x {COLS}")
    return row * 10 + col + 1


def key_position(number: int) -> tuple[int, int]:
    """The (row, column) of key `number` (1-80)."""
    if not 1 <= number <= ROWS * COLS:
        raise ValueError(f"{number} is not a keypad key number (1-{ROWS * COLS})")
    return (number - 1) // 10, (number - 1) % 10


def event_byte(row: int, col: int, pressed: bool) -> int:
    """A KEY_EVENT_A value: bit 7 press (1) or release (0), bits 6:0 the key number."""
    return (EVENT_PRESS if pressed else 0) | key_number(row, col)


class TCA8418(InterruptPin, MappedSMBusModel):
    """A TCA8418 with a key matrix the test presses: `press(row, col)`, `release(row, col)`,
    `keys([(row, col, pressed), ...])` for several at one instant (one interrupt).

    A key outside the matrix the driver configured (KP_GPIO1-3) is not scanned: pressing
    it makes no event. Pressing a key that is down, or releasing one that is up, changes
    nothing (the chip reports changes). `fifo()` is the FIFO's content, oldest first;
    `pressed` the keys held down; `lost` counts events an overflow dropped.
    """

    register_map = REGISTERS
    int_polarity = Polarity.ACTIVE_LOW
    int_drive = Drive.OPEN_DRAIN

    def __init__(self) -> None:
        # Registers change on the backend's thread (the driver) and the test's (keys).
        self._lock = threading.RLock()
        self.pressed: set[tuple[int, int]] = set()
        self.lost = 0
        self._deasserted = False  # INT_CFG = 1: the 50 us pulse after a clear
        super().__init__()

    # The pin

    @property
    def int_asserted(self) -> bool:
        if self._deasserted:
            return False
        cfg, stat = self.regs[CFG.address], self.regs[INT_STAT.address]
        enabled = 0
        if cfg & KE_IEN.mask:
            enabled |= K_INT.mask
        if cfg & GPI_IEN.mask:
            enabled |= GPI_INT.mask
        if cfg & K_LCK_IEN.mask:
            enabled |= K_LCK_INT.mask
        if cfg & OVR_FLOW_IEN.mask and cfg & OVR_FLOW_M.mask:
            enabled |= OVR_FLOW_INT.mask
        return bool(stat & enabled)

    def reset(self) -> None:
        with self._lock:
            super().reset()
            self.pressed = set()
            self.lost = 0
            self._deasserted = False
            self.update_int()

    # The key matrix

    def in_matrix(self, row: int, col: int) -> bool:
        """Whether the driver put `row` and `col` in the keypad matrix (KP_GPIO1-3)."""
        key_number(row, col)  # checks the position
        cols = self.regs[KP_GPIO2.address] | (self.regs[KP_GPIO3.address] & 0x03) << 8
        return bool(self.regs[KP_GPIO1.address] >> row & 1 and cols >> col & 1)

    def press(self, row: int, col: int) -> None:
        self.keys([(row, col, True)])

    def release(self, row: int, col: int) -> None:
        self.keys([(row, col, False)])

    def keys(self, changes: Iterable[tuple[int, int, bool]]) -> None:
        """Key changes the chip sees at one scan, in order: each (row, col, pressed)."""
        with self._lock:
            for row, col, down in changes:
                if not self.in_matrix(row, col) or ((row, col) in self.pressed) == down:
                    continue
                if down:
                    self.pressed.add((row, col))
                else:
                    self.pressed.discard((row, col))
                self._push(event_byte(row, col, down))
            self.update_int()

    def fifo(self) -> list[int]:
        """The events in the FIFO, oldest first."""
        with self._lock:
            count = min(KEC.get(self.regs[KEY_LCK_EC.address]), FIFO_DEPTH)
            return [self.regs[KEY_EVENT_A.address + i] for i in range(count)]

    def _push(self, event: int) -> None:
        ec = self.regs[KEY_LCK_EC.address]
        count = min(KEC.get(ec), FIFO_DEPTH)  # a fuzzed KEC may say more
        stat = self.regs[INT_STAT.address] | K_INT.mask
        if count >= FIFO_DEPTH:
            stat |= OVR_FLOW_INT.mask
            self.lost += 1
            if not self.regs[CFG.address] & OVR_FLOW_M.mask:
                self.regs[INT_STAT.address] = stat
                return  # overflow mode off: the new event is lost
            self._shift()  # on: the oldest is pushed out
            count -= 1
        self.regs[KEY_EVENT_A.address + count] = event
        self.regs[KEY_LCK_EC.address] = KEC.set(ec, count + 1)
        self.regs[INT_STAT.address] = stat

    def _shift(self) -> None:
        base = KEY_EVENT_A.address
        for i in range(FIFO_DEPTH - 1):
            self.regs[base + i] = self.regs[base + i + 1]
        self.regs[KEY_EVENT_J.address] = 0

    def _pop(self) -> None:
        ec = self.regs[KEY_LCK_EC.address]
        count = KEC.get(ec)
        if count == 0:
            return
        self._shift()
        self.regs[KEY_LCK_EC.address] = KEC.set(ec, min(count, FIFO_DEPTH) - 1)

    # Register access

    def read(self, length: int) -> bytes:
        with self._lock:
            if length <= 1 or self.regs[CFG.address] & AI.mask:
                return super().read(length)
            return bytes(self.reg_read(self.reg_addr) for _ in range(length))

    def write(self, data: bytes) -> None:
        with self._lock:
            if len(data) <= 2 or self.regs[CFG.address] & AI.mask:
                super().write(data)
                return
            for value in data[1:]:  # AI = 0: every byte to the same register
                super().write(bytes([data[0], value]))

    def on_read(self, reg: Register) -> None:
        if reg is KEY_EVENT_A:
            self._pop()

    def on_write(self, reg: Register, old: int, new: int) -> None:
        if reg is INT_STAT:
            if KEC.get(self.regs[KEY_LCK_EC.address]):
                # Events left: K_INT stays set ("will not [be] cleared until the FIFO is
                # cleared of all events").
                if old & K_INT.mask and not new & K_INT.mask:
                    self.regs[INT_STAT.address] = new | K_INT.mask
                    if self.regs[CFG.address] & INT_CFG.mask and self.int_asserted:
                        self._pulse()
        elif reg is KEY_LCK_EC and new & K_LCK_EN.mask:
            raise ModelError("TCA8418: the keypad lock (K_LCK_EN) is not modelled")
        elif reg in GPI_EM and new:
            raise ModelError(f"TCA8418: GPI events ({reg.name} = {new:#04x}) are not modelled")
        self.update_int()

    def _pulse(self) -> None:
        """INT_CFG = 1: /INT released for 50 us, then asserted again (Table 11)."""
        self._deasserted = True
        self.update_int()

        def again() -> None:
            with self._lock:
                self._deasserted = False
                self.update_int()

        self.clock.after(INT_DEASSERT_NS, again)
