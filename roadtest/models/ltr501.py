"""Lite-On LTR-501ALS-01 ambient light + proximity sensor, and its family members the
`ltr501` driver (drivers/iio/light/ltr501.c) also serves: LTR-559ALS-01 and LTR-301ALS-01.

Sources:

- **LTR-559ALS-01**: Lite-On Product Data Sheet, Spec No. DS86-2013-0003, Revision B
  (effective 07/09/2014), section "Register Set" and the register pages: ALS_PS_STATUS
  (0x8C, p. 22: data status "NEW data (first time data is being read)", set when a
  measurement is written to the data registers, cleared when the data register is read;
  bits 6:4 the gain the data was measured with), PS_DATA (0x8D/0x8E, p. 23: 11 bits, bit 7
  of 0x8E the saturation flag), PS_THRES (0x90-0x93, p. 25: resets FFh, 07h, 00h, 00h),
  ALS_THRES (0x97-0x9A, p. 28: resets FFh, FFh, 00h, 00h; "the interrupt function is
  active if the measurement data is outside the range defined by the upper and lower
  limits"), INTERRUPT PERSIST (0x9E, p. 30: 0000 every value out of range, 0001 two
  consecutive values ... 1111 sixteen; PS in 7:4, ALS in 3:0), ALS_DATA (0x88-0x8B,
  p. 20: CH1 low/high then CH0 low/high, little endian).
- **LTR-501ALS-01**: Lite-On data sheet (the 2012 release, Rev. 1.x; *not at hand while
  writing this model: every LTR-501 fact below is from memory* and marked "[mem]").
- **LTR-301ALS-01**: the LTR-501's ambient-light part without the proximity emitter; it
  answers with the LTR-501's part number [mem].

The register map, common to the family (8-bit registers, I2C address 0x23), resets after
the name:

- 80h ALS_CONTR, 00h. LTR-501 [mem]: 1:0 ALS mode (11b active, else standby), 2 SW reset,
  3 ALS gain (0 dynamic range 1, 1 dynamic range 2). LTR-559 [mem]: 0 mode (1 active),
  1 SW reset, 4:2 gain (000b 1X, 001b 2X, 010b 4X, 011b 8X, 110b 48X, 111b 96X; 100b and
  101b invalid, as ALS_PS_STATUS's gain field says).
- 81h PS_CONTR, 00h: 1:0 PS mode (1xb active) [mem], 3:2 PS gain (LTR-501 [mem]: 1X, 4X,
  8X, 16X; LTR-559 [mem]: 16X, 32X, 64X, 64X), 5 saturation indicator enable (LTR-559).
- 82h PS_LED (6Bh; LTR-559 7Fh) and 83h PS_N_PULSES (7Fh; LTR-559 01h) [mem]: stored.
- 84h PS_MEAS_RATE, 02h: 3:0 50, 70, 100, 200, 500, 1000, 2000 ms, 2000 ms from 0111b
  on [mem].
- 85h ALS_MEAS_RATE, 03h: 4:3 integration time 100, 50, 200, 400 ms (LTR-559: 5:3, and
  then 150, 250, 300, 350 ms [mem]); 2:0 repeat rate 50,
  100, 200, 500, 1000, 2000, 2000, 2000 ms [mem].
- 86h PART_ID: 80h (LTR-501, LTR-301), 92h (LTR-559) [mem]: part number 7:4, revision
  3:0. 87h MANUFAC_ID 05h [mem].
- 88h-8Bh ALS_DATA_CH1_0/1, ALS_DATA_CH0_0/1, 00h, read only.
- 8Ch ALS_PS_STATUS, 00h, read only: 0 PS data status, 1 PS interrupt, 2 ALS data status,
  3 ALS interrupt (LTR-559: 6:4 the data's gain).
- 8Dh-8Eh PS_DATA_0/1, 00h, read only: 11 bits.
- 8Fh INTERRUPT, 08h (LTR-501 [mem]) or 00h (LTR-559): 0 PS may interrupt, 1 ALS may
  interrupt, 2 polarity (0 active low), 3 output mode (LTR-501 [mem]).
- 90h-93h PS_THRES_UP_0/1, PS_THRES_LOW_0/1: FFh 07h 00h 00h, 11 bits.
- 94h-95h PS_OFFSET_1/0, 00h: the LTR-559's only.
- 97h-9Ah ALS_THRES_UP_0/1, ALS_THRES_LOW_0/1: FFh FFh 00h 00h, 16 bits.
- 9Eh INTERRUPT_PERSIST, 00h.

Behaviour modelled:

- A measurement stores `ch0`/`ch1` (ALS counts) or `ps` (PS counts) into the data
  registers and sets the data status bit; reading the data registers clears it.
- The ALS compares its channel-0 count [mem: "the ALS threshold applies to CH0"], the PS
  its count, with the window [LOW, UP]: outside it for PERSIST + 1 consecutive
  measurements sets the interrupt status bit and, when the INTERRUPT register's mode bit
  for that source is set, asserts INT. Status and INT stay latched until ALS_PS_STATUS
  is read [mem], which clears both interrupt status bits and releases INT.
- INT is open drain; polarity from INTERRUPT bit 2 (0: active low, the reset value).
- Timing, on the model's clock: an active ALS measures every max(repeat rate,
  integration time), the first one that long after it was made active; the PS every
  PS_MEAS_RATE period. Without simulated time the model measures at once: a read of
  ALS_PS_STATUS while a source is active and its data are old completes a measurement of
  that source (the test may also call `measure_als()` / `measure_ps()`).
- SW reset (ALS_CONTR) puts every register back to its reset value; the bit reads 0.

Simplified: the counts are the test's inputs as they are (gain, integration time and the
LED settings do not scale them; the model records them, and the LTR-559's status reports
the gain); no saturation flag or data-valid bit; the LTR-501 output-mode bit has no
effect (INT is always latched); no power-up delay after standby.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import ClassVar, Final

from roadtest.models.base import Input
from roadtest.models.interrupt import Drive, InterruptPin, Polarity
from roadtest.models.regmap import RO, Field, MappedSMBusModel, Register, RegisterMap
from roadtest.simtime.clock import NS_PER_MS

ALS_CONTR: Final = 0x80
PS_CONTR: Final = 0x81
PS_LED: Final = 0x82
PS_N_PULSES: Final = 0x83
PS_MEAS_RATE: Final = 0x84
ALS_MEAS_RATE: Final = 0x85
PART_ID: Final = 0x86
MANUFAC_ID: Final = 0x87
ALS_DATA_CH1_0: Final = 0x88
ALS_DATA_CH1_1: Final = 0x89
ALS_DATA_CH0_0: Final = 0x8A
ALS_DATA_CH0_1: Final = 0x8B
ALS_PS_STATUS: Final = 0x8C
PS_DATA_0: Final = 0x8D
PS_DATA_1: Final = 0x8E
INTERRUPT: Final = 0x8F
PS_THRES_UP_0: Final = 0x90
PS_THRES_UP_1: Final = 0x91
PS_THRES_LOW_0: Final = 0x92
PS_THRES_LOW_1: Final = 0x93
PS_OFFSET_1: Final = 0x94
PS_OFFSET_0: Final = 0x95
ALS_THRES_UP_0: Final = 0x97
ALS_THRES_UP_1: Final = 0x98
ALS_THRES_LOW_0: Final = 0x99
ALS_THRES_LOW_1: Final = 0x9A
INTERRUPT_PERSIST: Final = 0x9E

ALS_DATA: Final = frozenset({ALS_DATA_CH1_0, ALS_DATA_CH1_1, ALS_DATA_CH0_0, ALS_DATA_CH0_1})
PS_DATA: Final = frozenset({PS_DATA_0, PS_DATA_1})

# ALS_PS_STATUS
PS_DATA_STATUS: Final = Field("PS_DATA_STATUS", 0, access=RO)
PS_INT_STATUS: Final = Field("PS_INT_STATUS", 1, access=RO)
ALS_DATA_STATUS: Final = Field("ALS_DATA_STATUS", 2, access=RO)
ALS_INT_STATUS: Final = Field("ALS_INT_STATUS", 3, access=RO)

# PS_CONTR (both parts)
PS_MODE: Final = Field("PS_MODE", 1, 0)
PS_GAIN: Final = Field("PS_GAIN", 3, 2)

# INTERRUPT
INT_PS: Final = Field("PS_INT_MODE", 0)
INT_ALS: Final = Field("ALS_INT_MODE", 1)
INT_POLARITY: Final = Field("INT_POLARITY", 2, values={"ACTIVE_LOW": 0, "ACTIVE_HIGH": 1})

# ALS_MEAS_RATE and PS_MEAS_RATE [mem]
ALS_INT_TIME: Final = Field("ALS_INT_TIME", 4, 3)
#: The LTR-559's integration time field is 5:3 [mem].
ALS_INT_TIME_559: Final = Field("ALS_INT_TIME", 5, 3)
ALS_RATE: Final = Field("ALS_RATE", 2, 0)
PS_RATE: Final = Field("PS_RATE", 3, 0)
#: ALS integration time by ALS_MEAS_RATE[4:3], ms [mem]; the LTR-559's 5:3 goes on with
#: 150, 250, 300, 350 ms [mem].
ALS_INTEGRATION_MS: Final = (100, 50, 200, 400, 150, 250, 300, 350)
#: ALS measurement repeat rate by ALS_MEAS_RATE[2:0], ms [mem].
ALS_REPEAT_MS: Final = (50, 100, 200, 500, 1000, 2000, 2000, 2000)
#: PS measurement rate by PS_MEAS_RATE[3:0], ms; 0111b and up are 2000 ms [mem].
PS_REPEAT_MS: Final = (50, 70, 100, 200, 500, 1000, 2000) + (2000,) * 9

# INTERRUPT_PERSIST
PS_PERSIST: Final = Field("PS_PERSIST", 7, 4)
ALS_PERSIST: Final = Field("ALS_PERSIST", 3, 0)

ALS_MAX: Final = 0xFFFF
PS_MAX: Final = 0x7FF  # 11 bits


@dataclass(frozen=True)
class Chip:
    """What differs between the parts."""

    name: str
    part_id: int  # PART_ID's reset value: part number 7:4, revision 3:0
    als_mode: Field  # ALS_CONTR's mode field
    als_active: int  # its value that means active
    sw_reset: Field
    als_gain: Field
    #: ALS gain factor by als_gain's value (None: an invalid code)
    als_gains: tuple[int | None, ...]
    #: PS gain factor by PS_CONTR[3:2]
    ps_gains: tuple[int, ...]
    interrupt_reset: int
    int_time: Field  # ALS_MEAS_RATE's integration time field
    proximity: bool  # whether the part has the PS (emitter and channel)


LTR501_CHIP: Final = Chip(
    name="LTR-501ALS-01",
    part_id=0x80,
    als_mode=Field("ALS_MODE", 1, 0),
    als_active=0b11,
    sw_reset=Field("SW_RESET", 2),
    als_gain=Field("ALS_GAIN", 3, values={"RANGE1": 0, "RANGE2": 1}),
    # Dynamic range 1 is 2 lux .. 64k lux, range 2 0.02 lux .. 640 lux [mem]: 100X apart.
    als_gains=(1, 100),
    ps_gains=(1, 4, 8, 16),
    interrupt_reset=0x08,
    int_time=ALS_INT_TIME,
    proximity=True,
)
LTR559_CHIP: Final = Chip(
    name="LTR-559ALS-01",
    part_id=0x92,
    als_mode=Field("ALS_MODE", 0),
    als_active=1,
    sw_reset=Field("SW_RESET", 1),
    als_gain=Field("ALS_GAIN", 4, 2),
    als_gains=(1, 2, 4, 8, None, None, 48, 96),
    ps_gains=(16, 32, 64, 64),
    interrupt_reset=0x00,
    int_time=ALS_INT_TIME_559,
    proximity=True,
)
LTR301_CHIP: Final = Chip(
    name="LTR-301ALS-01",
    part_id=0x80,
    als_mode=LTR501_CHIP.als_mode,
    als_active=LTR501_CHIP.als_active,
    sw_reset=LTR501_CHIP.sw_reset,
    als_gain=LTR501_CHIP.als_gain,
    als_gains=LTR501_CHIP.als_gains,
    ps_gains=LTR501_CHIP.ps_gains,
    interrupt_reset=LTR501_CHIP.interrupt_reset,
    int_time=ALS_INT_TIME,
    proximity=False,
)


def register_map(chip: Chip) -> RegisterMap:
    ltr559 = chip is LTR559_CHIP
    registers = [
        Register(
            "ALS_CONTR", ALS_CONTR, 0x00, fields=(chip.als_mode, chip.sw_reset, chip.als_gain)
        ),
        Register(
            "PS_CONTR",
            PS_CONTR,
            0x00,
            fields=(PS_MODE, PS_GAIN) + ((Field("PS_SAT_EN", 5),) if ltr559 else ()),
        ),
        Register("PS_LED", PS_LED, 0x7F if ltr559 else 0x6B),
        Register("PS_N_PULSES", PS_N_PULSES, 0x01 if ltr559 else 0x7F),
        Register("PS_MEAS_RATE", PS_MEAS_RATE, 0x02, fields=(PS_RATE,)),
        Register("ALS_MEAS_RATE", ALS_MEAS_RATE, 0x03, fields=(chip.int_time, ALS_RATE)),
        Register("PART_ID", PART_ID, chip.part_id, RO),
        Register("MANUFAC_ID", MANUFAC_ID, 0x05, RO),
        Register("ALS_DATA_CH1_0", ALS_DATA_CH1_0, 0x00, RO),
        Register("ALS_DATA_CH1_1", ALS_DATA_CH1_1, 0x00, RO),
        Register("ALS_DATA_CH0_0", ALS_DATA_CH0_0, 0x00, RO),
        Register("ALS_DATA_CH0_1", ALS_DATA_CH0_1, 0x00, RO),
        Register(
            "ALS_PS_STATUS",
            ALS_PS_STATUS,
            0x00,
            RO,
            fields=(PS_DATA_STATUS, PS_INT_STATUS, ALS_DATA_STATUS, ALS_INT_STATUS),
        ),
        Register("PS_DATA_0", PS_DATA_0, 0x00, RO),
        Register("PS_DATA_1", PS_DATA_1, 0x00, RO),
        Register(
            "INTERRUPT",
            INTERRUPT,
            chip.interrupt_reset,
            fields=(INT_PS, INT_ALS, INT_POLARITY)
            + ((Field("NA", 7, 3, reserved=True),) if ltr559 else ()),
        ),
        Register("PS_THRES_UP_0", PS_THRES_UP_0, 0xFF),
        Register("PS_THRES_UP_1", PS_THRES_UP_1, 0x07, fields=(Field("HIGH", 2, 0),)),
        Register("PS_THRES_LOW_0", PS_THRES_LOW_0, 0x00),
        Register("PS_THRES_LOW_1", PS_THRES_LOW_1, 0x00, fields=(Field("HIGH", 2, 0),)),
    ]
    if ltr559:
        registers += [
            Register("PS_OFFSET_1", PS_OFFSET_1, 0x00, fields=(Field("HIGH", 1, 0),)),
            Register("PS_OFFSET_0", PS_OFFSET_0, 0x00),
        ]
    registers += [
        Register("ALS_THRES_UP_0", ALS_THRES_UP_0, 0xFF),
        Register("ALS_THRES_UP_1", ALS_THRES_UP_1, 0xFF),
        Register("ALS_THRES_LOW_0", ALS_THRES_LOW_0, 0x00),
        Register("ALS_THRES_LOW_1", ALS_THRES_LOW_1, 0x00),
        Register("INTERRUPT_PERSIST", INTERRUPT_PERSIST, 0x00, fields=(PS_PERSIST, ALS_PERSIST)),
    ]
    return RegisterMap(registers, width=8, byteorder="little")


def datasheet_lux(ch0: int, ch1: int) -> float:
    """The LTR-501's lux from its two channels at the default settings (dynamic range 1,
    100 ms) [mem: the data sheet's ALS lux formula]: by the ratio CH1 / (CH0 + CH1),
    below 0.45: 1.7743 CH0 + 1.1059 CH1; below 0.64: 3.7725 CH0 - 1.3363 CH1; below 0.85:
    1.6903 CH0 - 0.1693 CH1; else 0 (mostly infrared). No light: 0."""
    if ch0 + ch1 == 0:
        return 0.0
    ratio = ch1 / (ch0 + ch1)
    if ratio < 0.45:
        return 1.7743 * ch0 + 1.1059 * ch1
    if ratio < 0.64:
        return 3.7725 * ch0 - 1.3363 * ch1
    if ratio < 0.85:
        return 1.6903 * ch0 - 0.1693 * ch1
    return 0.0


class LTR501Family(InterruptPin, MappedSMBusModel):
    """One part of the family after power-on; `LTR501`, `LTR559` and `LTR301` are the parts.

    Inputs: `ch0` (visible + IR) and `ch1` (IR) ALS counts, `ps` the PS count (11 bits).
    For tests: `als_measurements` / `ps_measurements` count the measurements made.
    """

    chip: ClassVar[Chip]

    int_polarity = Polarity.ACTIVE_LOW
    int_drive = Drive.OPEN_DRAIN

    ch0 = Input[int](bits=16, initial=0)
    ch1 = Input[int](bits=16, initial=0)
    ps = Input[int](bits=11, initial=0)

    def __init__(self) -> None:
        self._lock = threading.RLock()
        super().__init__()

    def reset(self) -> None:
        with self._lock:
            super().reset()
            self._after_register_reset()

    def _after_register_reset(self) -> None:
        self._als_beyond = 0
        self._ps_beyond = 0
        self._als_run = getattr(self, "_als_run", 0) + 1  # cancels a scheduled measurement
        self._ps_run = getattr(self, "_ps_run", 0) + 1
        self.als_measurements = 0
        self.ps_measurements = 0
        if getattr(self, "_int_output", None) is not None:
            self.int_output.polarity = Polarity.ACTIVE_LOW
            self.update_int()

    # State, for tests

    @property
    def als_active(self) -> bool:
        return self.chip.als_mode.get(self.regs[ALS_CONTR]) == self.chip.als_active

    @property
    def ps_active(self) -> bool:
        return self.chip.proximity and bool(PS_MODE.get(self.regs[PS_CONTR]) & 0b10)

    @property
    def status(self) -> int:
        return self.regs[ALS_PS_STATUS]

    def als_gain(self) -> int | None:
        return self.chip.als_gains[self.chip.als_gain.get(self.regs[ALS_CONTR])]

    def ps_gain(self) -> int:
        return self.chip.ps_gains[PS_GAIN.get(self.regs[PS_CONTR])]

    def integration_ms(self) -> int:
        return ALS_INTEGRATION_MS[self.chip.int_time.get(self.regs[ALS_MEAS_RATE])]

    def als_period_ms(self) -> int:
        """Between two ALS measurements: the repeat rate, or the integration time if longer."""
        rate = ALS_REPEAT_MS[ALS_RATE.get(self.regs[ALS_MEAS_RATE])]
        return max(rate, self.integration_ms())

    def ps_period_ms(self) -> int:
        return PS_REPEAT_MS[PS_RATE.get(self.regs[PS_MEAS_RATE])]

    def _word(self, low: int) -> int:
        return self.regs[low] | self.regs[low + 1] << 8

    def als_thresholds(self) -> tuple[int, int]:
        """(low, up)."""
        return self._word(ALS_THRES_LOW_0), self._word(ALS_THRES_UP_0)

    def ps_thresholds(self) -> tuple[int, int]:
        return self._word(PS_THRES_LOW_0), self._word(PS_THRES_UP_0)

    # Measurements

    def measure_als(self) -> None:
        """One ALS measurement now, of `ch0` and `ch1`, then the threshold comparison."""
        with self._lock:
            ch0, ch1 = int(self.ch0), int(self.ch1)
            self.regs[ALS_DATA_CH1_0] = ch1 & 0xFF
            self.regs[ALS_DATA_CH1_1] = ch1 >> 8
            self.regs[ALS_DATA_CH0_0] = ch0 & 0xFF
            self.regs[ALS_DATA_CH0_1] = ch0 >> 8
            status = ALS_DATA_STATUS.set(self.regs[ALS_PS_STATUS], 1)
            if self.chip is LTR559_CHIP:
                # bits 6:4: the gain code the data were measured with
                gain = self.chip.als_gain.get(self.regs[ALS_CONTR])
                status = (status & ~0x70) | gain << 4
            self.regs[ALS_PS_STATUS] = status
            self.als_measurements += 1
            low, up = self.als_thresholds()
            if ch0 < low or ch0 > up:
                self._als_beyond += 1
            else:
                self._als_beyond = 0
            if self._als_beyond > ALS_PERSIST.get(self.regs[INTERRUPT_PERSIST]):
                self.regs[ALS_PS_STATUS] = ALS_INT_STATUS.set(self.regs[ALS_PS_STATUS], 1)
            self.update_int()

    def measure_ps(self) -> None:
        """One PS measurement now, of `ps`, then the threshold comparison."""
        with self._lock:
            value = int(self.ps) & PS_MAX
            self.regs[PS_DATA_0] = value & 0xFF
            self.regs[PS_DATA_1] = value >> 8
            self.regs[ALS_PS_STATUS] = PS_DATA_STATUS.set(self.regs[ALS_PS_STATUS], 1)
            self.ps_measurements += 1
            low, up = self.ps_thresholds()
            if value < low or value > up:
                self._ps_beyond += 1
            else:
                self._ps_beyond = 0
            if self._ps_beyond > PS_PERSIST.get(self.regs[INTERRUPT_PERSIST]):
                self.regs[ALS_PS_STATUS] = PS_INT_STATUS.set(self.regs[ALS_PS_STATUS], 1)
            self.update_int()

    def _schedule_als(self, run: int) -> None:
        def fire() -> None:
            with self._lock:
                if run != self._als_run or not self.als_active:
                    return
                self.measure_als()
                self._schedule_als(run)

        self.clock.after(self.als_period_ms() * NS_PER_MS, fire)

    def _schedule_ps(self, run: int) -> None:
        def fire() -> None:
            with self._lock:
                if run != self._ps_run or not self.ps_active:
                    return
                self.measure_ps()
                self._schedule_ps(run)

        self.clock.after(self.ps_period_ms() * NS_PER_MS, fire)

    # INT

    @property
    def int_asserted(self) -> bool:
        status = self.regs[ALS_PS_STATUS]
        config = self.regs[INTERRUPT]
        return bool(
            (ALS_INT_STATUS.get(status) and INT_ALS.get(config))
            or (PS_INT_STATUS.get(status) and INT_PS.get(config))
        )

    # Registers

    def reg_read(self, addr: int) -> int:
        with self._lock:
            if addr == ALS_PS_STATUS and not self.clock.simulated:
                # Measurements complete at once: an active source with old data measures.
                status = self.regs[ALS_PS_STATUS]
                if self.als_active and not ALS_DATA_STATUS.get(status):
                    self.measure_als()
                if self.ps_active and not PS_DATA_STATUS.get(self.regs[ALS_PS_STATUS]):
                    self.measure_ps()
            return super().reg_read(addr)

    def on_read(self, reg: Register) -> None:
        addr = reg.address
        if addr in ALS_DATA:
            self.regs[ALS_PS_STATUS] = ALS_DATA_STATUS.set(self.regs[ALS_PS_STATUS], 0)
        elif addr in PS_DATA:
            self.regs[ALS_PS_STATUS] = PS_DATA_STATUS.set(self.regs[ALS_PS_STATUS], 0)
        elif addr == ALS_PS_STATUS:
            # Reading the status clears the interrupt flags and releases INT [mem].
            status = ALS_INT_STATUS.set(self.regs[ALS_PS_STATUS], 0)
            self.regs[ALS_PS_STATUS] = PS_INT_STATUS.set(status, 0)
            self.update_int()

    def reg_write(self, addr: int, val: int) -> None:
        with self._lock:
            super().reg_write(addr, val)

    def on_write(self, reg: Register, old: int, new: int) -> None:
        addr = reg.address
        chip = self.chip
        if addr == ALS_CONTR:
            if chip.sw_reset.get(new):
                self.reset_registers()  # the bit itself reads back 0
                self._after_register_reset()
                return
            was = chip.als_mode.get(old) == chip.als_active
            if self.als_active and not was:
                self._als_run += 1
                self._als_beyond = 0
                if self.clock.simulated:
                    self._schedule_als(self._als_run)
            elif not self.als_active:
                self._als_run += 1
        elif addr == PS_CONTR:
            was = chip.proximity and bool(PS_MODE.get(old) & 0b10)
            if self.ps_active and not was:
                self._ps_run += 1
                self._ps_beyond = 0
                if self.clock.simulated:
                    self._schedule_ps(self._ps_run)
            elif not self.ps_active:
                self._ps_run += 1
        elif addr == INTERRUPT:
            polarity = INT_POLARITY.get(new)
            self.int_output.polarity = Polarity.ACTIVE_HIGH if polarity else Polarity.ACTIVE_LOW
            self.update_int()


class LTR501(LTR501Family):
    chip = LTR501_CHIP
    register_map = register_map(LTR501_CHIP)


class LTR559(LTR501Family):
    chip = LTR559_CHIP
    register_map = register_map(LTR559_CHIP)


class LTR301(LTR501Family):
    chip = LTR301_CHIP
    register_map = register_map(LTR301_CHIP)
