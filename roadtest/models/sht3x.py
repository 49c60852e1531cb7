"""Sensirion SHT3x-DIS humidity and temperature sensor, a chip of 16-bit commands.

From "Datasheet SHT3x-DIS", Sensirion, Version 5, May 2018 (Table 9 single-shot
commands, Table 10 periodic commands, Table 11 fetch data, Table 12 ART, Table 13
break, Table 16 heater, Tables 17-19 status register, Table 20 CRC, section 4.13
conversion formulas) and the application note "Alert Mode of SHT3x-DIS", Version 1,
May 2015 (limit commands and their reduced 7+9-bit format).

Not checked against a page, taken from memory of those documents: the measurement
durations (Table 4, max: high 15 ms, medium 6 ms, low 4 ms), the soft reset command
0x30A2, the serial number command 0x3780 (a later datasheet's), the alert limits'
power-up values, and that a read with no measurement ready is NACKed.

Simplified: no ALERT pin; the tracking alerts are computed when a periodic measurement
is fetched or the status read, against the measurement then; ART measures at 4 Hz;
section 4.7 only recommends a Break before other commands in periodic mode, so the
model takes them. The measurement durations hold under simulated time only: on any other
clock a measurement is ready at once, and periodic mode has a new one at every fetch.
"""

from __future__ import annotations

from typing import Final

from roadtest.models.base import Input, ModelError
from roadtest.models.command import CommandI2CModel, crc8

NS_PER_MS: Final = 1_000_000


def sht3x_crc(word: bytes) -> int:
    """Table 20: CRC-8, polynomial 0x31, init 0xFF, no reflection, no final XOR."""
    return crc8(word, 0x31, 0xFF)


def words(*values: int) -> bytes:
    """16-bit words as the chip sends them: each MSB first and followed by its CRC."""
    out = bytearray()
    for value in values:
        word = value.to_bytes(2, "big")
        out += word + bytes([sht3x_crc(word)])
    return bytes(out)


# Table 9: single shot, clock stretching disabled / enabled: (repeatability, ms).
SINGLE_SHOT: Final = {0x2400: 15, 0x240B: 6, 0x2416: 4}
SINGLE_SHOT_STRETCH: Final = {0x2C06: 15, 0x2C0D: 6, 0x2C10: 4}
MEASUREMENT_MS: Final = {"high": 15, "medium": 6, "low": 4}
# Table 10: periodic data acquisition: measurements per second by command.
PERIODIC: Final = {
    0x2032: 0.5, 0x2024: 0.5, 0x202F: 0.5,
    0x2130: 1.0, 0x2126: 1.0, 0x212D: 1.0,
    0x2236: 2.0, 0x2220: 2.0, 0x222B: 2.0,
    0x2334: 4.0, 0x2322: 4.0, 0x2329: 4.0,
    0x2737: 10.0, 0x2721: 10.0, 0x272A: 10.0,
}  # fmt: skip
PERIODIC_REPEATABILITY: Final = {
    0x2032: "high", 0x2130: "high", 0x2236: "high", 0x2334: "high", 0x2737: "high",
    0x2024: "medium", 0x2126: "medium", 0x2220: "medium", 0x2322: "medium", 0x2721: "medium",
}  # fmt: skip
FETCH_DATA: Final = 0xE000
ART: Final = 0x2B32
BREAK: Final = 0x3093
SOFT_RESET: Final = 0x30A2
HEATER_ON: Final = 0x306D
HEATER_OFF: Final = 0x3066
READ_STATUS: Final = 0xF32D
CLEAR_STATUS: Final = 0x3041
READ_SERIAL: Final = 0x3780

# Alert mode application note, Table 2: read and write commands of the four limits.
LIMIT_READ: Final = {
    0xE11F: "high_set",
    0xE114: "high_clear",
    0xE109: "low_clear",
    0xE102: "low_set",
}
LIMIT_WRITE: Final = {
    0x611D: "high_set",
    0x6116: "high_clear",
    0x610B: "low_clear",
    0x6100: "low_set",
}
# Power-up limits: 80 %RH 60 degC, 79 %RH 58 degC, 22 %RH -9 degC, 20 %RH -10 degC.
LIMIT_RESET: Final = {
    "high_set": 0xCD33,
    "high_clear": 0xC92D,
    "low_clear": 0x3869,
    "low_set": 0x3466,
}

# Table 18: status register bits.
ALERT_PENDING: Final = 1 << 15
HEATER: Final = 1 << 13
RH_ALERT: Final = 1 << 11
T_ALERT: Final = 1 << 10
RESET_DETECTED: Final = 1 << 4
COMMAND_FAILED: Final = 1 << 1
WRITE_CRC_FAILED: Final = 1 << 0
STATUS_RESET: Final = ALERT_PENDING | RESET_DETECTED
CLEARED_BY_CLEAR: Final = ALERT_PENDING | RH_ALERT | T_ALERT | RESET_DETECTED


def temperature_ticks(degc: float) -> int:
    """Section 4.13 inverted: T = -45 + 175 * ST / (2^16 - 1), ST clamped to 16 bits."""
    return max(0, min(0xFFFF, round((degc + 45) * 0xFFFF / 175)))


def humidity_ticks(rh: float) -> int:
    """Section 4.13 inverted: RH = 100 * SRH / (2^16 - 1)."""
    return max(0, min(0xFFFF, round(rh * 0xFFFF / 100)))


class SHT3x(CommandI2CModel):
    """`temperature` (degC) and `humidity` (%RH) are what the sensor measures.

    Single-shot results are ready the measurement duration after the command (NACK
    before); periodic mode measures every period from its command and Fetch Data
    returns the newest measurement once (NACK when there is none new).
    """

    opcode_names = {
        **{op: "MEASURE_SINGLE" for op in SINGLE_SHOT},
        **{op: "MEASURE_SINGLE_STRETCH" for op in SINGLE_SHOT_STRETCH},
        **{op: f"PERIODIC_{mps:g}MPS" for op, mps in PERIODIC.items()},
        FETCH_DATA: "FETCH_DATA",
        ART: "ART",
        BREAK: "BREAK",
        SOFT_RESET: "SOFT_RESET",
        HEATER_ON: "HEATER_ON",
        HEATER_OFF: "HEATER_OFF",
        READ_STATUS: "READ_STATUS",
        CLEAR_STATUS: "CLEAR_STATUS",
        READ_SERIAL: "READ_SERIAL",
        **{op: f"READ_LIMIT_{name.upper()}" for op, name in LIMIT_READ.items()},
        **{op: f"WRITE_LIMIT_{name.upper()}" for op, name in LIMIT_WRITE.items()},
    }

    temperature = Input[float](initial=25.0)
    humidity = Input[float](initial=50.0)
    serial_number = Input[int](initial=0x1234_5678)

    def __init__(self) -> None:
        super().__init__()
        self.temperature = 25.0
        self.humidity = 50.0
        self.serial_number = 0x1234_5678
        self.reset()

    def reset(self) -> None:
        """Power-up (and soft reset) state: idle, single shot, the reset values."""
        self.status = STATUS_RESET
        self.limits = dict(LIMIT_RESET)
        self.period_ns: int | None = None  # periodic mode's period, None in single shot
        self.periodic_start = 0
        self.periodic_duration_ns = 0
        self.fetched = 0  # periodic measurements fetched so far
        self.single_ready_at: int | None = None

    def measurement(self) -> bytes:
        return words(temperature_ticks(self.temperature), humidity_ticks(self.humidity))

    def _periodic_count(self) -> int:
        """Periodic measurements completed so far. Without simulated time (basic
        time-travel, a real clock) the guest's time is not the model's: the chip is
        infinitely fast, and a new measurement is ready at every fetch."""
        assert self.period_ns is not None
        if not self.clock.simulated:
            return self.fetched + 1
        elapsed = self.clock.now() - self.periodic_start - self.periodic_duration_ns
        return 0 if elapsed < 0 else elapsed // self.period_ns + 1

    def _track_alerts(self) -> None:
        """Alert mode (periodic only): set above high_set or below low_set, cleared
        between the clear limits; T compares its 9 MSBs, RH its 7."""
        st, srh = temperature_ticks(self.temperature), humidity_ticks(self.humidity)
        for bit, value, shift, mask in (
            (T_ALERT, st >> 7, 0, 0x1FF),
            (RH_ALERT, srh >> 9, 9, 0x7F),
        ):
            high_set, high_clear, low_clear, low_set = (
                (self.limits[name] >> shift) & mask
                for name in ("high_set", "high_clear", "low_clear", "low_set")
            )
            if value >= high_set or value <= low_set:
                self.status |= bit | ALERT_PENDING
            elif low_clear < value < high_clear:
                self.status &= ~bit

    def command(self, opcode: int, args: bytes) -> None:
        if args and opcode not in LIMIT_WRITE:
            self.status |= COMMAND_FAILED
            raise ModelError(f"SHT3x: {self.opcode_name(opcode)} takes no data ({args.hex()})")
        if opcode != READ_STATUS:  # the status read reports on the command before it
            self.status &= ~COMMAND_FAILED
        now = self.clock.now()
        if opcode in SINGLE_SHOT:
            # Without simulated time, done at once (docs/models.md, time).
            duration = SINGLE_SHOT[opcode] * NS_PER_MS if self.clock.simulated else 0
            self.single_ready_at = now + duration
        elif opcode in SINGLE_SHOT_STRETCH:
            self.single_ready_at = now  # the chip stretches the clock until it is done
        elif opcode in PERIODIC or opcode == ART:
            mps = PERIODIC.get(opcode, 4.0)
            repeatability = PERIODIC_REPEATABILITY.get(opcode, "low")
            self.period_ns = round(1e9 / mps)
            self.periodic_start = now
            self.periodic_duration_ns = MEASUREMENT_MS[repeatability] * NS_PER_MS
            self.fetched = 0
        elif opcode == FETCH_DATA:
            if self.period_ns is None:
                self.status |= COMMAND_FAILED
                raise ModelError("SHT3x: Fetch Data outside periodic mode")
        elif opcode == BREAK:
            self.period_ns = None
        elif opcode == SOFT_RESET:
            self.reset()
        elif opcode == HEATER_ON:
            self.status |= HEATER
        elif opcode == HEATER_OFF:
            self.status &= ~HEATER
        elif opcode == CLEAR_STATUS:
            self.status &= ~CLEARED_BY_CLEAR
        elif opcode == READ_STATUS:
            if self.period_ns is not None and self._periodic_count():
                self._track_alerts()
            self.respond(words(self.status))
        elif opcode == READ_SERIAL:
            self.respond(words(self.serial_number >> 16, self.serial_number & 0xFFFF))
        elif opcode in LIMIT_READ:
            self.respond(words(self.limits[LIMIT_READ[opcode]]))
        elif opcode in LIMIT_WRITE:
            if len(args) != 3:
                self.status |= COMMAND_FAILED
                raise ModelError(f"SHT3x: {self.opcode_name(opcode)} needs a word and its CRC")
            if sht3x_crc(args[:2]) != args[2]:
                # "the SHT3x-DIS only accepts data if it is followed by the correct checksum"
                self.status |= WRITE_CRC_FAILED
                raise ModelError(f"SHT3x: {self.opcode_name(opcode)} with a wrong CRC")
            self.status &= ~WRITE_CRC_FAILED
            self.limits[LIMIT_WRITE[opcode]] = int.from_bytes(args[:2], "big")
        else:
            self.status |= COMMAND_FAILED
            super().command(opcode, args)

    def pending(self) -> bytes | None:
        last = self.commands[-1][0] if self.commands else None
        if last in SINGLE_SHOT or last in SINGLE_SHOT_STRETCH:
            if self.single_ready_at is None or self.clock.now() < self.single_ready_at:
                return None  # still measuring: the read header is NACKed
            self.single_ready_at = None
            return self.measurement()
        if last == FETCH_DATA and self.period_ns is not None:
            count = self._periodic_count()
            if count <= self.fetched:
                return None  # no new measurement: NACK
            self.fetched = count
            self._track_alerts()
            return self.measurement()
        return super().pending()
