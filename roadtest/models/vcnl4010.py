"""Vishay VCNL4010 / VCNL4020 proximity and ambient light sensors: 8-bit registers 0x80-0x8f.

Follows the VCNL4010 datasheet (83462); the VCNL4020 (83476) has the same
register map and product ID. Beside the VCNL4000 (vcnl4000.py) this family
adds a proximity rate, self-timed (periodic) measurements, threshold and
data-ready interrupts with a write-1-to-clear status register, and an
active-low, open-drain INT output, driven here on the model's `irq` GPIO line.

A test sets what the sensor sees (`als_result`, `prox_result`) and then
either lets the driver start an on-demand measurement (the COMMAND register's
od bits) or calls `periodic_measurement()`, one period of the self-timed mode
the driver started.

Simplified: measurements complete at once (the guest clock jumps anyway);
the rates, LED current, averaging and modulator timing have no effect; ALS
averaging and offset compensation are not modelled (the result is
`als_result` as set); `int_count_exceed` counts consecutive measurements
outside the window of the selected source, with one counter for both
thresholds.
"""

from __future__ import annotations

import threading
from typing import Final

from roadtest.models.base import Input, ModelError, SMBusModel
from roadtest.models.interrupt import Drive, InterruptPin, Polarity

REG_COMMAND: Final = 0x80
REG_PRODUCT_ID_REVISION: Final = 0x81
REG_PROXIMITY_RATE: Final = 0x82
REG_IR_LED_CURRENT: Final = 0x83
REG_ALS_PARAM: Final = 0x84
REG_ALS_RESULT_HIGH: Final = 0x85
REG_ALS_RESULT_LOW: Final = 0x86
REG_PROX_RESULT_HIGH: Final = 0x87
REG_PROX_RESULT_LOW: Final = 0x88
REG_INTERRUPT_CONTROL: Final = 0x89
REG_LOW_THRESHOLD_HIGH: Final = 0x8A
REG_LOW_THRESHOLD_LOW: Final = 0x8B
REG_HIGH_THRESHOLD_HIGH: Final = 0x8C
REG_HIGH_THRESHOLD_LOW: Final = 0x8D
REG_INTERRUPT_STATUS: Final = 0x8E
REG_PROX_MOD_TIMING: Final = 0x8F

# Register #0, COMMAND
COMMAND_CONFIG_LOCK: Final = 1 << 7  # read-only, always 1
COMMAND_ALS_DATA_RDY: Final = 1 << 6  # read-only; reset by reading either ALS result register
COMMAND_PROX_DATA_RDY: Final = 1 << 5  # read-only; reset by reading either proximity result
COMMAND_ALS_OD: Final = 1 << 4  # start an on-demand ALS measurement
COMMAND_PROX_OD: Final = 1 << 3
COMMAND_ALS_EN: Final = 1 << 2  # periodic ALS measurements (with selftimed_en)
COMMAND_PROX_EN: Final = 1 << 1
COMMAND_SELFTIMED_EN: Final = 1 << 0
COMMAND_WRITABLE: Final = 0x1F

# Register #3: bits 7:6 are the fuse programming ID (read-only), 5:0 the current in 10 mA
LED_CURRENT_FUSE_ID: Final = 0xC0
LED_CURRENT_MAX: Final = 20  # "valid range = 0 to 20d"

# Register #9, interrupt control
ICR_COUNT_EXCEED_SHIFT: Final = 5  # bits 7:5: 1, 2, 4 ... 128 consecutive measurements
ICR_PROX_READY_EN: Final = 1 << 3
ICR_ALS_READY_EN: Final = 1 << 2
ICR_THRES_EN: Final = 1 << 1
ICR_THRES_SEL_ALS: Final = 1 << 0  # 0: thresholds apply to proximity, 1: to ALS
ICR_WRITABLE: Final = 0xEF  # bit 4 is n/a

# Register #14, interrupt status: bits stay set until the host writes 1 to them
ISR_PROX_READY: Final = 1 << 3
ISR_ALS_READY: Final = 1 << 2
ISR_TH_LOW: Final = 1 << 1
ISR_TH_HI: Final = 1 << 0
ISR_BITS: Final = 0x0F

PRODUCT_ID_REVISION: Final = 0x21  # product 2, revision 1

RESET: Final = {
    REG_COMMAND: COMMAND_CONFIG_LOCK,
    REG_PRODUCT_ID_REVISION: PRODUCT_ID_REVISION,
    REG_PROXIMITY_RATE: 0x00,  # 1.95 measurements/s
    REG_IR_LED_CURRENT: 0x02,  # 20 mA
    REG_ALS_PARAM: 0x1D,  # 2 samples/s, auto offset compensation, 32 conversions averaged
    REG_ALS_RESULT_HIGH: 0x00,
    REG_ALS_RESULT_LOW: 0x00,
    REG_PROX_RESULT_HIGH: 0x00,
    REG_PROX_RESULT_LOW: 0x00,
    REG_INTERRUPT_CONTROL: 0x00,
    REG_LOW_THRESHOLD_HIGH: 0x00,
    REG_LOW_THRESHOLD_LOW: 0x00,
    REG_HIGH_THRESHOLD_HIGH: 0x00,
    REG_HIGH_THRESHOLD_LOW: 0x00,
    REG_INTERRUPT_STATUS: 0x00,
    REG_PROX_MOD_TIMING: 0x01,
}
READ_ONLY: Final = frozenset(
    {
        REG_PRODUCT_ID_REVISION,
        REG_ALS_RESULT_HIGH,
        REG_ALS_RESULT_LOW,
        REG_PROX_RESULT_HIGH,
        REG_PROX_RESULT_LOW,
    }
)


class VCNL4010(InterruptPin, SMBusModel):
    """The VCNL4010's registers and INT output; see the module docstring."""

    int_polarity = Polarity.ACTIVE_LOW
    int_drive = Drive.OPEN_DRAIN

    name = "VCNL4010"
    als_result = Input[int](bits=16)  # the ALS result registers, high and low byte
    prox_result = Input[int](bits=16)  # the proximity result registers
    measurements_complete = Input[bool]()

    def __init__(self) -> None:
        super().__init__(regbytes=1)
        # The backend's thread (the driver's transfers) and the test's thread
        # (periodic_measurement, irq) both change the registers.
        self._lock = threading.RLock()
        self.regs = dict(RESET)
        self.als_result = 0x0000
        self.prox_result = 0x0000
        # A broken or covered sensor: on-demand measurements never finish.
        self.measurements_complete = True
        self._outside_window = 0  # consecutive measurements beyond a threshold

    # The INT pin: active low, asserted while any interrupt status bit is set

    @property
    def int_asserted(self) -> bool:
        return self.regs[REG_INTERRUPT_STATUS] & ISR_BITS != 0

    # What tests read

    @property
    def low_threshold(self) -> int:
        return self.regs[REG_LOW_THRESHOLD_HIGH] << 8 | self.regs[REG_LOW_THRESHOLD_LOW]

    @property
    def high_threshold(self) -> int:
        return self.regs[REG_HIGH_THRESHOLD_HIGH] << 8 | self.regs[REG_HIGH_THRESHOLD_LOW]

    @property
    def self_timed(self) -> bool:
        return bool(self.regs[REG_COMMAND] & COMMAND_SELFTIMED_EN)

    # Measurements

    def _measure_als(self) -> None:
        self.regs[REG_ALS_RESULT_HIGH] = (self.als_result >> 8) & 0xFF
        self.regs[REG_ALS_RESULT_LOW] = self.als_result & 0xFF
        self.regs[REG_COMMAND] |= COMMAND_ALS_DATA_RDY
        icr = self.regs[REG_INTERRUPT_CONTROL]
        if icr & ICR_ALS_READY_EN:
            self.regs[REG_INTERRUPT_STATUS] |= ISR_ALS_READY
        if icr & ICR_THRES_EN and icr & ICR_THRES_SEL_ALS:
            self._check_thresholds(self.als_result)

    def _measure_prox(self) -> None:
        self.regs[REG_PROX_RESULT_HIGH] = (self.prox_result >> 8) & 0xFF
        self.regs[REG_PROX_RESULT_LOW] = self.prox_result & 0xFF
        self.regs[REG_COMMAND] |= COMMAND_PROX_DATA_RDY
        icr = self.regs[REG_INTERRUPT_CONTROL]
        if icr & ICR_PROX_READY_EN:
            self.regs[REG_INTERRUPT_STATUS] |= ISR_PROX_READY
        if icr & ICR_THRES_EN and not icr & ICR_THRES_SEL_ALS:
            self._check_thresholds(self.prox_result)

    def _check_thresholds(self, value: int) -> None:
        above = value > self.high_threshold
        below = value < self.low_threshold
        if not (above or below):
            self._outside_window = 0
            return
        self._outside_window += 1
        needed = 1 << (self.regs[REG_INTERRUPT_CONTROL] >> ICR_COUNT_EXCEED_SHIFT)
        if self._outside_window >= needed:
            self.regs[REG_INTERRUPT_STATUS] |= (ISR_TH_HI if above else 0) | (
                ISR_TH_LOW if below else 0
            )

    def periodic_measurement(self) -> bool:
        """One self-timed period passes: measure what prox_en/als_en enable, raise interrupts.

        Returns whether anything was measured: False unless the driver set
        selftimed_en and at least one of prox_en and als_en.
        """
        with self._lock:
            command = self.regs[REG_COMMAND]
            if not command & COMMAND_SELFTIMED_EN:
                return False
            measured = False
            if command & COMMAND_PROX_EN:
                self._measure_prox()
                measured = True
            if command & COMMAND_ALS_EN:
                self._measure_als()
                measured = True
            self.update_int()
            return measured

    # Registers

    def reg_read(self, addr: int) -> int:
        with self._lock:
            if addr not in self.regs:
                raise ModelError(f"{self.name}: read of undefined register {addr:#04x}")
            value = self.regs[addr]
            if addr in (REG_ALS_RESULT_HIGH, REG_ALS_RESULT_LOW):
                self.regs[REG_COMMAND] &= ~COMMAND_ALS_DATA_RDY
            elif addr in (REG_PROX_RESULT_HIGH, REG_PROX_RESULT_LOW):
                self.regs[REG_COMMAND] &= ~COMMAND_PROX_DATA_RDY
            return value

    def reg_write(self, addr: int, val: int) -> None:
        with self._lock:
            if addr not in self.regs:
                raise ModelError(
                    f"{self.name}: write of {val:#04x} to undefined register {addr:#04x}"
                )
            if addr in READ_ONLY:
                raise ModelError(
                    f"{self.name}: write of {val:#04x} to read-only register {addr:#04x}"
                )
            command = self.regs[REG_COMMAND]
            if addr == REG_COMMAND:
                self._write_command(val)
            elif addr == REG_INTERRUPT_STATUS:
                self.regs[addr] &= ~(val & ISR_BITS)
                self.update_int()
            elif addr == REG_INTERRUPT_CONTROL:
                self.regs[addr] = val & ICR_WRITABLE
                self._outside_window = 0
            elif addr in (REG_PROXIMITY_RATE, REG_ALS_PARAM) and command & COMMAND_SELFTIMED_EN:
                # "changes in reading rates (reg #4 and reg #2) can be made only when
                # selftimed_en = 0": undefined otherwise, so the driver must not.
                raise ModelError(
                    f"{self.name}: write of {val:#04x} to register {addr:#04x} while selftimed_en "
                    "is set (the datasheet allows rate changes only with selftimed_en = 0)"
                )
            elif addr == REG_ALS_PARAM and command & COMMAND_ALS_OD:
                raise ModelError(
                    f"{self.name}: write of {val:#04x} to the ALS parameters during an "
                    "on-demand ALS measurement (allowed only with als_od = 0)"
                )
            elif addr == REG_IR_LED_CURRENT:
                if val & ~LED_CURRENT_FUSE_ID > LED_CURRENT_MAX:
                    raise ModelError(
                        f"{self.name}: IR LED current {val & ~LED_CURRENT_FUSE_ID} is beyond "
                        f"the valid 0-{LED_CURRENT_MAX} (x 10 mA)"
                    )
                self.regs[addr] = (self.regs[addr] & LED_CURRENT_FUSE_ID) | (
                    val & ~LED_CURRENT_FUSE_ID
                )
            else:
                self.regs[addr] = val

    def _write_command(self, val: int) -> None:
        command = (self.regs[REG_COMMAND] & ~COMMAND_WRITABLE) | (val & COMMAND_WRITABLE)
        if command & COMMAND_SELFTIMED_EN:
            # "On-demand measurement modes are disabled if selftimed_en bit is set."
            command &= ~(COMMAND_ALS_OD | COMMAND_PROX_OD)
        self.regs[REG_COMMAND] = command
        if self.measurements_complete:
            # The od bits read back as 0 once the (instant) measurement is over.
            if command & COMMAND_ALS_OD:
                self._measure_als()
            if command & COMMAND_PROX_OD:
                self._measure_prox()
            self.regs[REG_COMMAND] &= ~(COMMAND_ALS_OD | COMMAND_PROX_OD)
        self.update_int()


class VCNL4020(VCNL4010):
    """The VCNL4020: the VCNL4010's registers, product ID and behaviour (datasheet 83476)."""

    name = "VCNL4020"
