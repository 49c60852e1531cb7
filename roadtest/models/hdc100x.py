"""TI HDC1000/HDC1008/HDC1010/HDC1050/HDC1080 humidity and temperature sensors.

From the HDC1080 datasheet (TI SNAS672A, revised January 2016) and the HDC1000's
(TI SNAS643): 16-bit big-endian registers behind an 8-bit pointer ("Register Map"):

- 0x00 Temperature, 0x01 Humidity (read-only, reset 0x0000), 0x02 Configuration
  (reset 0x1000), 0xFB-0xFD serial ID, 0xFE Manufacturer ID (0x5449, "TI"),
  0xFF Device ID (0x1000 on the HDC1000/1008/1010, 0x1050 on the HDC1050/1080).
- Configuration: RST (bit 15, self-clearing software reset), HEAT (13), MODE (12:
  0 = temperature or humidity, 1 = both, temperature first), BTST (11, read-only
  battery status), TRES (10: 0 = 14 bits, 1 = 11 bits), HRES (9:8: 00 = 14 bits,
  01 = 11 bits, 10 = 8 bits); bits 14 and 7:0 reserved.
- A measurement is triggered by a pointer write of 0x00 (temperature; in MODE 1
  both) or 0x01 (humidity). Reading before the conversion is complete is NACKed.
- Conversion times ("Electrical Characteristics"): temperature 6.35 ms (14 bits)
  and 3.65 ms (11 bits); humidity 6.50 ms (14 bits), 3.85 ms (11 bits), 2.50 ms
  (8 bits). They pass on the model's clock: at once unless the guest runs on
  simulated time.
- Results: T = raw / 2^16 * 165 - 40 degC, RH = raw / 2^16 * 100 %; the
  unconverted low bits of a result read 0.

Checked against third-party register listings and the driver's datasheet links only,
not against a TI page: the exact revision letters, that a read of any register (not
only the measurement) is NACKed during a conversion, which low bits are zero at 11
and 8 bits, and what a pointer write of 0x01 does in MODE 1 (here: humidity only).
"""

from __future__ import annotations

from typing import Final

from roadtest.models.base import Input, ModelError
from roadtest.models.regmap import RO, Field, MappedSMBusModel, Register, RegisterMap

NS_PER_US: Final = 1_000

RST: Final = Field("RST", 15)
HEAT: Final = Field("HEAT", 13)
MODE: Final = Field("MODE", 12, values={"SINGLE": 0, "BOTH": 1})
BTST: Final = Field("BTST", 11, access=RO)
TRES: Final = Field("TRES", 10, values={"14BIT": 0, "11BIT": 1})
HRES: Final = Field("HRES", 9, 8, values={"14BIT": 0b00, "11BIT": 0b01, "8BIT": 0b10})

REGISTERS: Final = RegisterMap(
    [
        Register("TEMPERATURE", 0x00, 0x0000, RO),
        Register("HUMIDITY", 0x01, 0x0000, RO),
        Register("CONFIGURATION", 0x02, 0x1000, fields=(RST, HEAT, MODE, BTST, TRES, HRES)),
        Register("SERIAL_ID_1", 0xFB, 0x0000, RO),
        Register("SERIAL_ID_2", 0xFC, 0x0000, RO),
        Register("SERIAL_ID_3", 0xFD, 0x0000, RO),
        Register("MANUFACTURER_ID", 0xFE, 0x5449, RO),
        Register("DEVICE_ID", 0xFF, 0x1050, RO),
    ],
    width=16,
    byteorder="big",
)
TEMPERATURE: Final = REGISTERS["TEMPERATURE"]
HUMIDITY: Final = REGISTERS["HUMIDITY"]
CONFIGURATION: Final = REGISTERS["CONFIGURATION"]
DEVICE_ID_HDC1000: Final = 0x1000  # HDC1000, HDC1008, HDC1010
DEVICE_ID_HDC1080: Final = 0x1050  # HDC1050, HDC1080

# Conversion times in ns, by TRES and by HRES.
TEMPERATURE_TIME_NS: Final = {0: 6350 * NS_PER_US, 1: 3650 * NS_PER_US}
HUMIDITY_TIME_NS: Final = {0b00: 6500 * NS_PER_US, 0b01: 3850 * NS_PER_US, 0b10: 2500 * NS_PER_US}
TEMPERATURE_BITS: Final = {0: 14, 1: 11}
HUMIDITY_BITS: Final = {0b00: 14, 0b01: 11, 0b10: 8}


def temperature_code(degc: float, bits: int = 14) -> int:
    """The Temperature register for `degc`: raw / 2^16 * 165 - 40, `bits` significant."""
    raw = round((degc + 40) / 165 * 65536)
    return _code(raw, bits)


def humidity_code(rh: float, bits: int = 14) -> int:
    """The Humidity register for `rh` %: raw / 2^16 * 100, `bits` significant."""
    return _code(round(rh / 100 * 65536), bits)


def _code(raw: int, bits: int) -> int:
    raw = min(max(raw, 0), 0xFFFF)
    return raw & ~((1 << (16 - bits)) - 1)


class HDC100x(MappedSMBusModel):
    """`temperature` (degC) and `humidity` (%RH) are what the sensor measures.

    A pointer write of 0x00 or 0x01 starts a measurement; until its conversion time has
    passed on the model's clock every read is NACKed (a ModelError), then the result
    registers hold it. `device_id` picks the variant (`power_on={"DEVICE_ID": ...}`).
    For tests, `measurements` holds (ns of the clock, pointer) of each trigger.
    Simplified: the heater heats nothing, BTST stays 0 (supply above 2.8 V).
    """

    register_map = REGISTERS
    temperature = Input[float](initial=25.0)
    humidity = Input[float](initial=50.0)

    def __init__(self, device_id: int = DEVICE_ID_HDC1080) -> None:
        super().__init__(power_on={"DEVICE_ID": device_id})
        self.measurements: list[tuple[int, int]] = []
        self.conversion_times = (dict(TEMPERATURE_TIME_NS), dict(HUMIDITY_TIME_NS))

    def reset(self) -> None:
        super().reset()
        self._conversion = getattr(self, "_conversion", 0) + 1  # none in flight completes
        self.converting = False

    def write(self, data: bytes) -> None:
        if self.converting:
            raise ModelError("HDC100x: addressed during a conversion")
        super().write(data)
        if len(data) == 1 and data[0] in (TEMPERATURE.address, HUMIDITY.address):
            self._trigger(data[0])

    def read(self, length: int) -> bytes:
        if self.converting:
            raise ModelError("HDC100x: read before the conversion is complete (NACK)")
        return super().read(length)

    def on_write(self, reg: Register, old: int, new: int) -> None:
        if reg is CONFIGURATION and new & RST.mask:
            self.reset_registers()  # the software reset; RST reads back 0

    def _trigger(self, pointer: int) -> None:
        config = self.regs[CONFIGURATION.address]
        tres, hres = TRES.get(config), HRES.get(config)
        if hres not in HUMIDITY_BITS:
            raise ModelError(f"HDC100x: HRES {hres:#b} is reserved")
        both = MODE.get(config) == 1 and pointer == TEMPERATURE.address
        temp_ns, hum_ns = self.conversion_times
        delay = 0
        if pointer == TEMPERATURE.address:
            delay += temp_ns[tres]
        if pointer == HUMIDITY.address or both:
            delay += hum_ns[hres]
        self._conversion += 1
        conversion = self._conversion
        self.measurements.append((self.clock.now(), pointer))
        self.converting = True

        def done() -> None:
            if conversion != self._conversion:
                return
            self.converting = False
            if pointer == TEMPERATURE.address:
                code = temperature_code(self.temperature, TEMPERATURE_BITS[tres])
                self.regs[TEMPERATURE.address] = code
            if pointer == HUMIDITY.address or both:
                code = humidity_code(self.humidity, HUMIDITY_BITS[hres])
                self.regs[HUMIDITY.address] = code

        self.clock.after(delay, done)
