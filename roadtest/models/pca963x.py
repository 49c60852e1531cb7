"""NXP PCA9633 (4 outputs), PCA9634 (8) and PCA9635 (16): I2C-bus PWM LED controllers.

Datasheets: PCA9633 "4-bit Fm+ I2C-bus LED driver", product data sheet Rev. 05, 25 July
2008 (PCA9633_5); PCA9634 "8-bit Fm+ I2C-bus LED driver" and PCA9635 "16-bit Fm+ I2C-bus
LED driver" (the same register design with more outputs; their section numbers below are
the PCA9633's). What each fact rests on:

- From PCA9633 Rev. 05 as read for this model: the Control register (7.2: the pointer in
  the low bits, AI[2:0] in bits 7..5, bit 4 of the PCA9633's "unused and must be
  programmed with zero", reset state 80h, AI[2:0] = 001, 010, 011 reserved), the four
  Auto-Increment options with their roll-over points (Table 6), PWMx (7.3.3: 256 linear
  steps, duty = PWMx / 256, FFh = 99.6 %), GRPPWM (7.3.4: in dimming mode a 190 Hz group
  duty GDC / 256 over the individual PWM; in blinking mode the blink's duty cycle GDC /
  256), GRPFREQ (7.3.5: reset 00h, blink period (GFRQ + 1) / 24 s, 41 ms to 10.73 s, a
  don't-care while DMBLNK = 0), LEDOUT (7.3.6: LDRx 00 off, 01 fully on, 10 individual
  PWM, 11 PWM + group dimming/blinking; reset 00h), MODE2's OCH (outputs change on STOP
  or on ACK, for registers 02h (PWM0) to 08h (LEDOUT) only) and OUTNE (16-pin version).
- From the family's MODE1 table (PCA9624's Table 5, the same layout): AI2..AI0 read-only
  (AI2 = 1 at power-up, AI1 = AI0 = 0), SLEEP (1 at power-up: oscillator off; 500 us
  for the oscillator to start once SLEEP is cleared, and "timings on LEDn outputs are not
  guaranteed if PWMx, GRPPWM or GRPFREQ registers are accessed within the 500 us window";
  "no blinking or dimming is possible when the oscillator is off"), SUB1..SUB3 (0),
  ALLCALL (1). So MODE1 resets to 91h. That AI2..AI0 read back the Control register's
  Auto-Increment bits is this model's reading of "read only" bits whose reset value
  matches the Control register's 80h.
- From memory of the PCA9633/4/5 data sheets, not re-read: MODE2's layout (bits 7..6
  reserved, read-only 0; DMBLNK bit 5; INVRT bit 4; OCH bit 3; OUTDRV bit 2, 1 = totem
  pole, the default; OUTNE[1:0] = 01) and reset 05h; GRPPWM resetting to FFh; the
  register addresses of the PCA9634 (PWM0..7 at 02h..09h, GRPPWM 0Ah, GRPFREQ 0Bh,
  LEDOUT0..1 at 0Ch..0Dh, SUBADR1..3 0Eh..10h, ALLCALLADR 11h) and PCA9635 (PWM0..15 at
  02h..11h, GRPPWM 12h, GRPFREQ 13h, LEDOUT0..3 14h..17h, SUBADR1..3 18h..1Ah,
  ALLCALLADR 1Bh), whose Control register has a 5-bit pointer D4..D0; the subaddress
  reset values E2h, E4h, E8h and ALLCALLADR E0h (the same in PCA9685 Rev. 3, 7.3.6-7.3.7,
  whose register design comes from this family), each register's bit 0 read-only 0.

Simplified: the model sits at one address, so the subaddresses and the All Call address
are registers it keeps and `call_addresses()` reports, not addresses the bus routes to
it; no Software Reset (General Call A5h 5Ah); no OE pin (`output()` is what the outputs
do with OE low); no current or voltage, only the duty cycles and blink timing the
registers give.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import ClassVar, Final

from roadtest.models.base import ModelError
from roadtest.models.regmap import RO, Field, MappedSMBusModel, Register, RegisterMap

# MODE1 (address 00h).
AI: Final = Field("AI", 7, 5, access=RO)  # AI2..AI0, read-only: the Control register's
SLEEP: Final = Field("SLEEP", 4)
SUB1: Final = Field("SUB1", 3)
SUB2: Final = Field("SUB2", 2)
SUB3: Final = Field("SUB3", 1)
ALLCALL: Final = Field("ALLCALL", 0)
MODE1_RESET: Final = 0x91  # AI2 = 1 (Control register 80h), SLEEP = 1, ALLCALL = 1

# MODE2 (address 01h).
DMBLNK: Final = Field("DMBLNK", 5, values={"DIMMING": 0, "BLINKING": 1})
INVRT: Final = Field("INVRT", 4)
OCH: Final = Field("OCH", 3, values={"STOP": 0, "ACK": 1})
OUTDRV: Final = Field("OUTDRV", 2, values={"OPEN_DRAIN": 0, "TOTEM_POLE": 1})
OUTNE: Final = Field("OUTNE", 1, 0)
MODE2_RESET: Final = 0x05  # OUTDRV = 1 (totem pole), OUTNE = 01

# LEDOUT: two bits per output, LDRx (7.3.6).
LDR_OFF: Final = 0b00
LDR_ON: Final = 0b01
LDR_PWM: Final = 0b10
LDR_GROUP: Final = 0b11
LDR_NAMES: Final = {LDR_OFF: "off", LDR_ON: "on", LDR_PWM: "pwm", LDR_GROUP: "group"}

# Auto-Increment options, AI[2:0] (Table 6); 001, 010 and 011 are reserved.
AI_NONE: Final = 0b000
AI_ALL: Final = 0b100
AI_BRIGHTNESS: Final = 0b101
AI_GLOBAL: Final = 0b110
AI_BRIGHTNESS_GLOBAL: Final = 0b111
CONTROL_RESET: Final = 0x80

OSCILLATOR_STARTUP_NS: Final = 500_000  # 500 us max. after SLEEP is cleared
BLINK_STEPS_PER_S: Final = 24  # period = (GFRQ + 1) / 24 s
GROUP_DIMMING_HZ: Final = 190  # the group PWM's frequency while DMBLNK = 0
PWM_HZ: Final = 97_000  # the individual PWM's frequency (PCA9633 7.3.3)


@dataclass(frozen=True)
class Chip:
    """One member of the family: its outputs, and from that its register addresses."""

    name: str
    channels: int
    pointer_bits: int  # D3..D0 (PCA9633) or D4..D0 (PCA9634, PCA9635)

    @property
    def pwm0(self) -> int:
        return 0x02

    @property
    def grppwm(self) -> int:
        return self.pwm0 + self.channels

    @property
    def grpfreq(self) -> int:
        return self.grppwm + 1

    @property
    def ledout0(self) -> int:
        return self.grpfreq + 1

    @property
    def ledouts(self) -> int:
        return self.channels // 4

    @property
    def subadr1(self) -> int:
        return self.ledout0 + self.ledouts

    @property
    def allcalladr(self) -> int:
        return self.subadr1 + 3

    def ledout(self, output: int) -> tuple[int, int]:
        """The LEDOUT register of an output and the shift of its LDR bits."""
        self.check_output(output)
        return self.ledout0 + output // 4, 2 * (output % 4)

    def pwm(self, output: int) -> int:
        self.check_output(output)
        return self.pwm0 + output

    def check_output(self, output: int) -> None:
        if not 0 <= output < self.channels:
            raise ValueError(f"{self.name} has outputs 0..{self.channels - 1}, not {output}")

    def auto_increment_range(self, ai: int) -> tuple[int, int]:
        """The registers an Auto-Increment option cycles through, first and last (Table 6)."""
        if ai == AI_ALL:
            return 0x00, self.allcalladr
        if ai == AI_BRIGHTNESS:
            return self.pwm0, self.grppwm - 1
        if ai == AI_GLOBAL:
            return self.grppwm, self.grpfreq
        if ai == AI_BRIGHTNESS_GLOBAL:
            return self.pwm0, self.grpfreq
        raise ValueError(f"AI[2:0] = {ai:03b} does not auto-increment")


def register_map(chip: Chip) -> RegisterMap:
    """The chip's registers (PCA9633 Table 7 and its PCA9634/PCA9635 equivalents)."""
    address_lsb = Field("A0", 0, access=RO)  # only the 7 MSBs are an address
    registers: list[Register] = [
        Register("MODE1", 0x00, MODE1_RESET, fields=(AI, SLEEP, SUB1, SUB2, SUB3, ALLCALL)),
        Register(
            "MODE2",
            0x01,
            MODE2_RESET,
            fields=(Field("RESERVED", 7, 6, reserved=True), DMBLNK, INVRT, OCH, OUTDRV, OUTNE),
        ),
    ]
    registers += [Register(f"PWM{n}", chip.pwm(n), 0x00) for n in range(chip.channels)]
    registers += [
        Register("GRPPWM", chip.grppwm, 0xFF),
        Register("GRPFREQ", chip.grpfreq, 0x00),
    ]
    ledout_names = ["LEDOUT"] if chip.ledouts == 1 else [f"LEDOUT{n}" for n in range(chip.ledouts)]
    registers += [
        Register(
            name,
            chip.ledout0 + i,
            0x00,
            fields=tuple(Field(f"LDR{4 * i + j}", 2 * j + 1, 2 * j) for j in range(4)),
        )
        for i, name in enumerate(ledout_names)
    ]
    for i, reset in enumerate((0xE2, 0xE4, 0xE8)):
        registers.append(Register(f"SUBADR{i + 1}", chip.subadr1 + i, reset, fields=(address_lsb,)))
    registers.append(Register("ALLCALLADR", chip.allcalladr, 0xE0, fields=(address_lsb,)))
    return RegisterMap(registers, width=8)


PCA9633_CHIP: Final = Chip("PCA9633", channels=4, pointer_bits=4)
PCA9634_CHIP: Final = Chip("PCA9634", channels=8, pointer_bits=5)
PCA9635_CHIP: Final = Chip("PCA9635", channels=16, pointer_bits=5)


@dataclass(frozen=True)
class Output:
    """What one LEDn output does, from the registers the outputs have taken (7.3.3-7.3.6).

    `state`: LDRx's "off", "on", "pwm" or "group". `pwm`: the individual duty cycle
    (PWMx / 256; 1.0 fully on, 0.0 off). `group_dim`: GRPPWM / 256 where the 190 Hz group
    dimming applies (LDRx = 11, DMBLNK = 0), else None. `blink_period_s` and `blink_on`:
    (GFRQ + 1) / 24 s and GDC / 256 where the group blinks it (LDRx = 11, DMBLNK = 1),
    else None. `oscillating`: whether the oscillator that PWM, dimming and blinking need
    runs (SLEEP = 0 and its 500 us start-up over); off and fully on need none.
    """

    state: str
    pwm: float
    group_dim: float | None = None
    blink_period_s: float | None = None
    blink_on: float | None = None
    oscillating: bool = True

    @property
    def lit(self) -> bool:
        """Whether the LED is driven at all (some duty above 0, the oscillator running for
        a PWM state)."""
        if self.state == "off":
            return False
        if self.state == "on":
            return True
        if not self.oscillating:
            return False
        on = self.pwm * (self.group_dim if self.group_dim is not None else 1.0)
        if self.blink_on is not None:
            on *= self.blink_on
        return on > 0


# The registers whose output effect waits for the STOP while OCH = 0: 02h (PWM0) to the
# last LEDOUT ("applicable to registers from 02h (PWM0) to 08h (LEDOUT) only").


class PCA963x(MappedSMBusModel):
    """One PCA963x: its `chip` gives the outputs and the register addresses.

    The host's first byte of a write is the Control register (7.2): the register pointer
    and the Auto-Increment option, kept across transfers; each data byte read or written
    moves the pointer as the option says (Table 6). A reserved option, bit 4 set on the
    PCA9633 and a pointer at an address that has no register are ModelErrors (the chip's
    behaviour is undefined there).

    The outputs take the values of PWMx, GRPPWM, GRPFREQ and LEDOUT at the STOP of the
    transfer that wrote them while MODE2.OCH = 0, at once while OCH = 1; `output(n)` is
    what they do. `early_accesses` lists (register name, ns after SLEEP was cleared) of
    each access to PWMx, GRPPWM or GRPFREQ inside the oscillator's 500 us start-up (kept
    under simulated time only: on another clock the guest's time is not the model's).
    """

    chip: ClassVar[Chip]

    def __init__(self, power_on: Mapping[str, int] | None = None) -> None:
        self.control = CONTROL_RESET
        self.early_accesses: list[tuple[str, int]] = []
        self._woken_at: int | None = None
        self._shown: dict[int, int] = {}
        super().__init__(power_on)

    def reset(self) -> None:
        super().reset()
        self.control = CONTROL_RESET
        self.early_accesses = []
        self._woken_at = None
        self._shown = dict(self.regs)

    # The Control register

    @property
    def auto_increment(self) -> int:
        """AI[2:0] of the Control register."""
        return self.control >> 5

    @property
    def pointer(self) -> int:
        return self.control & ((1 << self.chip.pointer_bits) - 1)

    def _set_control(self, value: int) -> None:
        ai = value >> 5
        if ai in (0b001, 0b010, 0b011):
            raise ModelError(
                f"{self.chip.name}: Auto-Increment option AI[2:0] = {ai:03b} is reserved "
                f"(Table 6: 'must not be used for proper device operation')"
            )
        if self.chip.pointer_bits == 4 and value & 0x10:
            raise ModelError(
                f"{self.chip.name}: Control register bit 4 set in {value:#04x} (7.2: 'unused "
                f"and must be programmed with zero')"
            )
        self.control = value
        self.reg_addr = self.pointer

    def _advance(self) -> None:
        ai = self.auto_increment
        if not ai & 0b100:
            return
        first, last = self.chip.auto_increment_range(ai)
        pointer = self.pointer
        following = first if pointer == last else pointer + 1
        self.control = (self.control & ~((1 << self.chip.pointer_bits) - 1)) | following
        self.reg_addr = following

    def start_transfer(self) -> None:
        pass

    def end_transfer(self) -> None:
        # The STOP: outputs take what the transfer wrote (OCH = 0).
        self._shown = dict(self.regs)

    def write(self, data: bytes) -> None:
        if not data:
            return
        self._set_control(data[0])
        for value in data[1:]:
            # One register at a time, through SMBusModel's write: it logs the write.
            super().write(bytes([self.pointer, value]))
            self._advance()

    def read(self, length: int) -> bytes:
        out = bytearray()
        for _ in range(length):
            out += self._reg_bytes(self.pointer)
            self._advance()
        return bytes(out)

    # Registers

    def reg_read(self, addr: int) -> int:
        self._note_access(addr)
        value = super().reg_read(addr)
        if addr == 0x00:
            value = AI.set(value, self.auto_increment)
        return value

    def reg_write(self, addr: int, val: int) -> None:
        self._note_access(addr)
        super().reg_write(addr, val)

    def on_write(self, reg: Register, old: int, new: int) -> None:
        if reg.address == 0x00 and SLEEP.get(old) and not SLEEP.get(new):
            self._woken_at = self.clock.now()
        if OCH.get(self.regs[0x01]) or not self.chip.pwm0 <= reg.address < self.chip.subadr1:
            self._shown[reg.address] = new

    def _note_access(self, addr: int) -> None:
        if self._woken_at is None or not self.clock.simulated:
            return
        if not self.chip.pwm0 <= addr <= self.chip.grpfreq:
            return
        since = self.clock.now() - self._woken_at
        if since < OSCILLATOR_STARTUP_NS:
            self.early_accesses.append((self.register_map[addr].name, since))

    # What the chip does

    @property
    def sleeping(self) -> bool:
        return bool(SLEEP.get(self.regs[0x00]))

    @property
    def oscillating(self) -> bool:
        """SLEEP = 0 and the oscillator's start-up over (at once on an instant clock)."""
        if self.sleeping:
            return False
        if self._woken_at is None or not self.clock.simulated:
            return True
        return self.clock.now() - self._woken_at >= OSCILLATOR_STARTUP_NS

    @property
    def totem_pole(self) -> bool:
        """MODE2.OUTDRV: totem-pole outputs (1), or open-drain (0)."""
        return bool(OUTDRV.get(self.regs[0x01]))

    @property
    def inverted(self) -> bool:
        """MODE2.INVRT: the outputs' logic state inverted."""
        return bool(INVRT.get(self.regs[0x01]))

    @property
    def blinking(self) -> bool:
        """MODE2.DMBLNK: the group control blinks (1) or dims (0)."""
        return bool(DMBLNK.get(self.regs[0x01]))

    def ldr(self, output: int) -> int:
        """LDRx of an output, as the outputs have taken it."""
        reg, shift = self.chip.ledout(output)
        return (self._shown[reg] >> shift) & 0b11

    def output(self, output: int) -> Output:
        chip = self.chip
        state = self.ldr(output)
        name = LDR_NAMES[state]
        if state == LDR_OFF:
            return Output(name, 0.0)
        if state == LDR_ON:
            return Output(name, 1.0)
        pwm = self._shown[chip.pwm(output)] / 256
        oscillating = self.oscillating
        if state == LDR_PWM:
            return Output(name, pwm, oscillating=oscillating)
        gdc = self._shown[chip.grppwm] / 256
        if self.blinking:
            period = (self._shown[chip.grpfreq] + 1) / BLINK_STEPS_PER_S
            return Output(name, pwm, blink_period_s=period, blink_on=gdc, oscillating=oscillating)
        return Output(name, pwm, group_dim=gdc, oscillating=oscillating)

    def outputs(self) -> list[Output]:
        return [self.output(n) for n in range(self.chip.channels)]

    def call_addresses(self) -> set[int]:
        """The 7-bit addresses besides its own that the chip acknowledges: each enabled
        subaddress (SUBx = 1) and the All Call address (ALLCALL = 1)."""
        mode1 = self.regs[0x00]
        found = set()
        for i, bit in enumerate((SUB1, SUB2, SUB3)):
            if bit.get(mode1):
                found.add(self.regs[self.chip.subadr1 + i] >> 1)
        if ALLCALL.get(mode1):
            found.add(self.regs[self.chip.allcalladr] >> 1)
        return found


class PCA9633(PCA963x):
    chip = PCA9633_CHIP
    register_map = register_map(PCA9633_CHIP)


class PCA9634(PCA963x):
    chip = PCA9634_CHIP
    register_map = register_map(PCA9634_CHIP)


class PCA9635(PCA963x):
    chip = PCA9635_CHIP
    register_map = register_map(PCA9635_CHIP)


MODELS: Final[dict[str, type[PCA963x]]] = {
    "nxp,pca9633": PCA9633,
    "nxp,pca9634": PCA9634,
    "nxp,pca9635": PCA9635,
}


def ledout_value(states: Iterable[int]) -> int:
    """A LEDOUT register value from the LDR codes of its four outputs, output 0 first."""
    value = 0
    for i, state in enumerate(states):
        value |= state << (2 * i)
    return value


__all__ = [
    "MODELS",
    "PCA963x",
    "PCA9633",
    "PCA9634",
    "PCA9635",
    "Chip",
    "Output",
    "ledout_value",
]
