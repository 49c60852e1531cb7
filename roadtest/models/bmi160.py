"""Bosch BMI160 6-axis IMU (accelerometer and gyroscope) on I2C.

Written from the Bosch Sensortec data sheet BST-BMI160-DS000-07, revision 0.8
(February 2015); section numbers are that revision's. Where a fact is from memory of the
data sheet rather than a text at hand, its comment says "(memory)".

- Register map (section 2.11, Table "Register Map"): CHIP_ID 0xD1 (2.11.1), ERR_REG
  (2.11.2: fatal_err bit 0, err_code bits 4:1, i2c_fail_err bit 5, drop_cmd_err bit 6,
  mag_drdy_err bit 7; cleared when read), PMU_STATUS (2.11.3: acc_pmu_status bits 5:4,
  gyr_pmu_status bits 3:2, mag_pmu_status bits 1:0), DATA 0x04..0x17 (2.11.4: MAG X/Y/Z,
  RHALL, GYR X/Y/Z, ACC X/Y/Z, each LSB first, two's complement), SENSORTIME 0x18..0x1A,
  STATUS 0x1B (drdy_acc bit 7, drdy_gyr bit 6: "reset when one byte of the data register
  is read"), INT_STATUS 0x1C..0x1F (INT_STATUS[1] bit 4 drdy_int), TEMPERATURE,
  FIFO_LENGTH 0x22..0x23 (11-bit fill level; 0 is empty), FIFO_DATA 0x24 (an overread
  gives 0x80, 2.5.1.2), ACC_CONF 0x40 (acc_us bit 7, acc_bwp 6:4, acc_odr 3:0; reset
  0x28), ACC_RANGE 0x41 (reset 0x03), GYR_CONF 0x42 (gyr_bwp 5:4, gyr_odr 3:0; reset
  0x28), GYR_RANGE 0x43 (reset 0x00), FIFO_DOWNS, FIFO_CONFIG, INT_EN 0x50..0x52 (INT_EN[1]
  bit 4 int_drdy_en), INT_OUT_CTRL 0x53 (per pin, INT1 in bits 3:0 and INT2 in 7:4:
  edge_ctrl, lvl (1 active high), od (1 open drain), output_en), INT_LATCH 0x54 (int2 and
  int1 input_en bits 5 and 4, int_latch 3:0), INT_MAP 0x55..0x57 (INT_MAP[1] bit 7
  int1_drdy, bit 3 int2_drdy), the interrupt parameters 0x58..0x68, FOC_CONF, CONF,
  IF_CONF, PMU_TRIGGER, SELF_TEST, NV_CONF, OFFSET 0x71..0x77, STEP_CNT, STEP_CONF and CMD
  0x7E (write only). The reset values of the interrupt parameter, MAG_IF and STEP_CONF
  registers are from memory. Addresses the map leaves reserved (0x01, 0x25..0x3F,
  0x48..0x4A, 0x6E..0x6F, 0x7C..0x7D, 0x7F) are model errors; 0x7F is the dummy read an
  SPI host makes to switch the interface, not used on I2C.
- Sensitivity (section 1, Table 1): accelerometer 16384/8192/4096/2048 LSB/g at
  +-2/4/8/16 g (ACC_RANGE 0b0011/0b0101/0b1000/0b1100; other codes reserved, 2.11.13);
  gyroscope 16.4/32.8/65.6/131.2/262.4 LSB/(deg/s) at +-2000/1000/500/250/125 deg/s
  (GYR_RANGE 0..4, 2.11.15).
- Output data rates (2.11.12 and 2.11.14): acc_odr n gives 100/2^(8-n) Hz for n = 1..12
  (25/32 Hz .. 1600 Hz), gyr_odr 6..13 (25 .. 3200 Hz); other codes reserved. In normal
  mode (acc_us = 0) the accelerometer takes ODRs from 12.5 Hz up (2.4.1.1, memory): a
  lower one with acc_us = 0 is an invalid configuration, which the chip flags as an
  error in ERR_REG.err_code (0b0001, memory) and this model records in `config_errors`.
- Power modes (2.2, 2.11.38 CMD): after power-on or soft reset (CMD 0xB6) both sensors
  are suspended. CMD 0x10/0x11/0x12 set the accelerometer to suspend/normal/low power,
  0x14/0x15/0x17 the gyroscope to suspend/normal/fast start-up, 0xB0 flushes the FIFO,
  0xB1 resets the interrupt engine. Start-up from suspend to normal takes up to 3.8 ms
  (accelerometer) and 80 ms (gyroscope; 10 ms from fast start-up) (Table 1, memory for
  the exact maxima); PMU_STATUS shows the new mode once it is reached. A command written
  while a previous one is still being executed is dropped and sets ERR_REG.drop_cmd_err
  (2.11.2, 2.11.38). Other CMD codes are model errors (reserved).
- Write timing (the data sheet's note on the interface's idle time between writes;
  memory, section not at hand): after a write the host waits 2 us in normal mode and
  450 us while the sensors are suspended (or in low power) before the next write; a
  write sooner is lost. The model keeps that under simulated time (`lost_writes`).
- Data ready (2.6.10): when a new sample of the enabled sensors is complete, drdy_acc /
  drdy_gyr in STATUS are set and, with int_drdy_en, drdy_int; it is mapped to INT1 or INT2
  by INT_MAP[1]. The pin follows INT_OUT_CTRL (output enabled, level, push-pull or open
  drain); with the output disabled the pin is high impedance.

Simplified: samples do not come on their own at the ODR: the test sets `acceleration`
(g) and `angular_rate` (deg/s) and calls `data_ready()`, which latches a sample, raises
the data-ready flags and makes a new edge on the mapped pin; the data registers read the
current inputs while the sensor is in normal mode (the chip samples continuously) and hold
their last value while it is suspended. drdy_int is cleared once the new data of every
sensor whose data-ready flag is set was read (memory; the data sheet's text on when a
non-latched drdy pulse ends is not at hand). The FIFO is declared (FIFO_CONFIG, FIFO_DOWNS,
FIFO_LENGTH, FIFO_DATA) but never fills: FIFO_LENGTH reads 0 and FIFO_DATA the overread
value 0x80; the 6.12 driver does not use it. Not modelled: the magnetometer interface,
the motion/tap/orientation/flat/step engines, the temperature sensor (reads 0x8000,
"invalid", memory), self test, FOC, NVM, SPI, data shadowing of the MSBs, latched
interrupts, the pins as inputs (INT_LATCH input_en is recorded only, `pin_config`:
from memory, input_en makes the pin an input for the PMU trigger and FIFO tags, so a pin
with both input_en and output_en set may not drive; the model still drives it).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Final

from roadtest.models.base import Input, Line, ModelError
from roadtest.models.interrupt import Drive, InterruptOutput, Polarity, Wire
from roadtest.models.regmap import RO, WO, Field, MappedSMBusModel, Register, RegisterMap

NS_PER_US: Final = 1_000

CHIP_ID_BMI160: Final = 0xD1

# Register addresses (section 2.11's map): one constant per address, for trace names too.
REG_CHIP_ID: Final = 0x00
REG_ERR_REG: Final = 0x02
REG_PMU_STATUS: Final = 0x03
REG_DATA_MAG_X_L: Final = 0x04
REG_DATA_GYR_X_L: Final = 0x0C
REG_DATA_ACC_X_L: Final = 0x12
REG_DATA_END: Final = 0x17
REG_STATUS: Final = 0x1B
REG_INT_STATUS_1: Final = 0x1D
REG_TEMPERATURE_0: Final = 0x20
REG_TEMPERATURE_1: Final = 0x21
REG_FIFO_LENGTH_0: Final = 0x22
REG_FIFO_LENGTH_1: Final = 0x23
REG_FIFO_DATA: Final = 0x24
REG_ACC_CONF: Final = 0x40
REG_ACC_RANGE: Final = 0x41
REG_GYR_CONF: Final = 0x42
REG_GYR_RANGE: Final = 0x43
REG_FIFO_CONFIG_0: Final = 0x46
REG_FIFO_CONFIG_1: Final = 0x47
REG_INT_EN_1: Final = 0x51
REG_INT_OUT_CTRL: Final = 0x53
REG_INT_LATCH: Final = 0x54
REG_INT_MAP_1: Final = 0x56
REG_CMD: Final = 0x7E

# CMD codes (2.11.38)
CMD_ACC_SUSPEND: Final = 0x10
CMD_ACC_NORMAL: Final = 0x11
CMD_ACC_LOW_POWER: Final = 0x12
CMD_GYR_SUSPEND: Final = 0x14
CMD_GYR_NORMAL: Final = 0x15
CMD_GYR_FAST_STARTUP: Final = 0x17
CMD_FIFO_FLUSH: Final = 0xB0
CMD_INT_RESET: Final = 0xB1
CMD_SOFTRESET: Final = 0xB6
CMD_NAMES: Final = {
    CMD_ACC_SUSPEND: "acc_set_pmu_mode(suspend)",
    CMD_ACC_NORMAL: "acc_set_pmu_mode(normal)",
    CMD_ACC_LOW_POWER: "acc_set_pmu_mode(low power)",
    CMD_GYR_SUSPEND: "gyr_set_pmu_mode(suspend)",
    CMD_GYR_NORMAL: "gyr_set_pmu_mode(normal)",
    CMD_GYR_FAST_STARTUP: "gyr_set_pmu_mode(fast start-up)",
    CMD_FIFO_FLUSH: "fifo_flush",
    CMD_INT_RESET: "int_reset",
    CMD_SOFTRESET: "softreset",
}

# PMU modes as PMU_STATUS codes them (2.11.3)
SUSPEND: Final = 0b00
NORMAL: Final = 0b01
LOW_POWER: Final = 0b10  # accelerometer
FAST_STARTUP: Final = 0b11  # gyroscope

# Start-up times (Table 1, maxima; memory for the exact figures)
ACC_STARTUP_NS: Final = 3_800 * NS_PER_US
GYR_STARTUP_NS: Final = 80_000 * NS_PER_US
GYR_FAST_STARTUP_NS: Final = 10_000 * NS_PER_US
# The host's idle time between two writes (memory)
WRITE_IDLE_NORMAL_NS: Final = 2 * NS_PER_US
WRITE_IDLE_SUSPEND_NS: Final = 450 * NS_PER_US

#: ACC_RANGE code: (full scale in g, LSB per g) (Table 1 and 2.11.13)
ACC_RANGES: Final = {0b0011: (2, 16384), 0b0101: (4, 8192), 0b1000: (8, 4096), 0b1100: (16, 2048)}
#: GYR_RANGE code: (full scale in deg/s, LSB per deg/s, in tenths) (Table 1 and 2.11.15)
GYR_RANGES: Final = {0: (2000, 164), 1: (1000, 328), 2: (500, 656), 3: (250, 1312), 4: (125, 2624)}
#: acc_odr codes 1..12: 100 / 2^(8 - n) Hz (2.11.12)
ACC_ODR_CODES: Final = range(0x01, 0x0D)
#: gyr_odr codes 6..13 (2.11.14)
GYR_ODR_CODES: Final = range(0x06, 0x0E)
#: the slowest acc_odr normal mode (acc_us = 0) takes: 12.5 Hz (2.4.1.1, memory)
ACC_NORMAL_MIN_ODR_CODE: Final = 0x05
#: ERR_REG.err_code for an invalid sensor configuration (memory)
ERR_CODE_CONFIG: Final = 0b0001


def odr_hz(code: int) -> float:
    """The output data rate an acc_odr / gyr_odr code selects: 100 / 2^(8 - code) Hz."""
    return 100.0 * 2.0 ** (code - 8)


ACC_US = Field("acc_us", 7)
ACC_BWP = Field("acc_bwp", 6, 4)
ACC_ODR = Field("acc_odr", 3, 0)
ACC_RANGE = Field("acc_range", 3, 0)
GYR_BWP = Field("gyr_bwp", 5, 4)
GYR_ODR = Field("gyr_odr", 3, 0)
GYR_RANGE = Field("gyr_range", 2, 0)
ACC_PMU = Field("acc_pmu_status", 5, 4)
GYR_PMU = Field("gyr_pmu_status", 3, 2)
MAG_PMU = Field("mag_pmu_status", 1, 0)
ERR_CODE = Field("err_code", 4, 1)
DROP_CMD_ERR = Field("drop_cmd_err", 6)
DRDY_ACC = Field("drdy_acc", 7)
DRDY_GYR = Field("drdy_gyr", 6)
DRDY_INT = Field("drdy_int", 4)
INT_DRDY_EN = Field("int_drdy_en", 4)
INT1_DRDY = Field("int1_drdy", 7)
INT2_DRDY = Field("int2_drdy", 3)


def _pin_fields(pin: int, shift: int) -> tuple[Field, ...]:
    return (
        Field(f"int{pin}_output_en", shift + 3),
        Field(f"int{pin}_od", shift + 2),
        Field(f"int{pin}_lvl", shift + 1),
        Field(f"int{pin}_edge_ctrl", shift),
    )


_DATA_NAMES = [
    f"{axis}_{half}"
    for axis in (
        "MAG_X",
        "MAG_Y",
        "MAG_Z",
        "RHALL",
        "GYR_X",
        "GYR_Y",
        "GYR_Z",
        "ACC_X",
        "ACC_Y",
        "ACC_Z",
    )
    for half in ("LSB", "MSB")
]

REGISTERS = RegisterMap(
    [
        Register("CHIP_ID", REG_CHIP_ID, CHIP_ID_BMI160, RO),
        Register(
            "ERR_REG",
            REG_ERR_REG,
            0x00,
            RO,
            fields=(
                Field("mag_drdy_err", 7),
                DROP_CMD_ERR,
                Field("i2c_fail_err", 5),
                ERR_CODE,
                Field("fatal_err", 0),
            ),
        ),
        Register("PMU_STATUS", REG_PMU_STATUS, 0x00, RO, fields=(ACC_PMU, GYR_PMU, MAG_PMU)),
        *(Register(name, REG_DATA_MAG_X_L + i, 0x00, RO) for i, name in enumerate(_DATA_NAMES)),
        *(Register(f"SENSORTIME_{i}", 0x18 + i, 0x00, RO) for i in range(3)),
        Register(
            "STATUS",
            REG_STATUS,
            0x10,  # nvm_rdy (memory)
            RO,
            fields=(
                DRDY_ACC,
                DRDY_GYR,
                Field("drdy_mag", 5),
                Field("nvm_rdy", 4),
                Field("foc_rdy", 3),
                Field("mag_man_op", 2),
                Field("gyr_self_test_ok", 1),
            ),
        ),
        Register("INT_STATUS_0", 0x1C, 0x00, RO),
        Register("INT_STATUS_1", REG_INT_STATUS_1, 0x00, RO, fields=(DRDY_INT,)),
        Register("INT_STATUS_2", 0x1E, 0x00, RO),
        Register("INT_STATUS_3", 0x1F, 0x00, RO),
        Register("TEMPERATURE_0", REG_TEMPERATURE_0, 0x00, RO),
        Register("TEMPERATURE_1", REG_TEMPERATURE_1, 0x80, RO),
        Register("FIFO_LENGTH_0", REG_FIFO_LENGTH_0, 0x00, RO),
        Register(
            "FIFO_LENGTH_1",
            REG_FIFO_LENGTH_1,
            0x00,
            RO,
            fields=(Field("fifo_byte_counter_10_8", 2, 0),),
        ),
        Register("FIFO_DATA", REG_FIFO_DATA, 0x80, RO),
        Register("ACC_CONF", REG_ACC_CONF, 0x28, fields=(ACC_US, ACC_BWP, ACC_ODR)),
        Register(
            "ACC_RANGE",
            REG_ACC_RANGE,
            0x03,
            fields=(Field("reserved", 7, 4, reserved=True), ACC_RANGE),
        ),
        Register(
            "GYR_CONF",
            REG_GYR_CONF,
            0x28,
            fields=(Field("reserved", 7, 6, reserved=True), GYR_BWP, GYR_ODR),
        ),
        Register(
            "GYR_RANGE",
            REG_GYR_RANGE,
            0x00,
            fields=(Field("reserved", 7, 3, reserved=True), GYR_RANGE),
        ),
        Register("MAG_CONF", 0x44, 0x0B),
        Register("FIFO_DOWNS", 0x45, 0x88),
        Register(
            "FIFO_CONFIG_0", REG_FIFO_CONFIG_0, 0x80, fields=(Field("fifo_water_mark", 7, 0),)
        ),
        Register(
            "FIFO_CONFIG_1",
            REG_FIFO_CONFIG_1,
            0x10,
            fields=(
                Field("fifo_gyr_en", 7),
                Field("fifo_acc_en", 6),
                Field("fifo_mag_en", 5),
                Field("fifo_header_en", 4),
                Field("fifo_tag_int1_en", 3),
                Field("fifo_tag_int2_en", 2),
                Field("fifo_time_en", 1),
            ),
        ),
        *(
            Register(f"MAG_IF_{i}", 0x4B + i, reset)
            for i, reset in enumerate((0x20, 0x80, 0x42, 0x4C, 0x00))
        ),
        Register("INT_EN_0", 0x50, 0x00),
        Register("INT_EN_1", REG_INT_EN_1, 0x00, fields=(INT_DRDY_EN,)),
        Register("INT_EN_2", 0x52, 0x00),
        Register(
            "INT_OUT_CTRL", REG_INT_OUT_CTRL, 0x00, fields=(*_pin_fields(2, 4), *_pin_fields(1, 0))
        ),
        Register(
            "INT_LATCH",
            REG_INT_LATCH,
            0x00,
            fields=(Field("int2_input_en", 5), Field("int1_input_en", 4), Field("int_latch", 3, 0)),
        ),
        Register("INT_MAP_0", 0x55, 0x00),
        Register("INT_MAP_1", REG_INT_MAP_1, 0x00, fields=(INT1_DRDY, INT2_DRDY)),
        Register("INT_MAP_2", 0x57, 0x00),
        Register("INT_DATA_0", 0x58, 0x00),
        Register("INT_DATA_1", 0x59, 0x00),
        *(
            Register(f"INT_LOWHIGH_{i}", 0x5A + i, r)
            for i, r in enumerate((0x07, 0x30, 0x81, 0x0B, 0xC0))
        ),
        *(Register(f"INT_MOTION_{i}", 0x5F + i, r) for i, r in enumerate((0x00, 0x14, 0x14, 0x24))),
        Register("INT_TAP_0", 0x63, 0x04),
        Register("INT_TAP_1", 0x64, 0xDA),
        Register("INT_ORIENT_0", 0x65, 0x18),
        Register("INT_ORIENT_1", 0x66, 0x48),
        Register("INT_FLAT_0", 0x67, 0x08),
        Register("INT_FLAT_1", 0x68, 0x11),
        Register("FOC_CONF", 0x69, 0x00),
        Register("CONF", 0x6A, 0x00),
        Register("IF_CONF", 0x6B, 0x00),
        Register("PMU_TRIGGER", 0x6C, 0x00),
        Register("SELF_TEST", 0x6D, 0x00),
        Register("NV_CONF", 0x70, 0x00),
        *(Register(f"OFFSET_{i}", 0x71 + i, 0x00) for i in range(7)),
        Register("STEP_CNT_0", 0x78, 0x00, RO),
        Register("STEP_CNT_1", 0x79, 0x00, RO),
        Register("STEP_CONF_0", 0x7A, 0x15),
        Register("STEP_CONF_1", 0x7B, 0x03),
        Register("CMD", REG_CMD, 0x00, WO),
    ],
    width=8,
    byteorder="little",
)


@dataclass(frozen=True)
class Command:
    """One CMD write: when (model clock, ns), the code, and whether the chip took it."""

    at: int
    code: int
    accepted: bool


def _s16(value: int) -> int:
    return value - 0x10000 if value & 0x8000 else value


def _clip16(value: float) -> int:
    return max(-0x8000, min(0x7FFF, round(value)))


def acc_raw(g: float, range_code: int) -> int:
    """The ACC_* register value of `g` at an ACC_RANGE code: g * LSB/g, clipped to 16 bits."""
    return _clip16(g * ACC_RANGES[range_code][1])


def gyr_raw(dps: float, range_code: int) -> int:
    """The GYR_* register value of `dps` deg/s at a GYR_RANGE code."""
    return _clip16(dps * GYR_RANGES[range_code][1] / 10)


class BMI160(MappedSMBusModel):
    """The BMI160 on I2C: registers, power modes on the model's clock, data ready on
    INT1/INT2. See the module docstring for what the data sheet says and what is simplified.

    Test-facing: `acceleration` (g, per axis) and `angular_rate` (deg/s) inputs,
    `data_ready()`, `acc_pmu`/`gyr_pmu` (PMU_STATUS codes), `commands` (each CMD write),
    `lost_writes`, `config_errors`, `early_data_reads` (data read while a sensor was still
    starting), `int_asserted(pin)`, and the `int1`/`int2` lines the harness wires.
    """

    register_map = REGISTERS
    acceleration = Input[tuple[float, float, float]](initial=(0.0, 0.0, 1.0))
    angular_rate = Input[tuple[float, float, float]](initial=(0.0, 0.0, 0.0))

    def __init__(self, chip_id: int = CHIP_ID_BMI160) -> None:
        self._lock = threading.RLock()
        self._outputs = {
            pin: InterruptOutput(Polarity.ACTIVE_LOW, Drive.OPEN_DRAIN) for pin in (1, 2)
        }
        self._lines: dict[int, Line | None] = {1: None, 2: None}
        super().__init__(power_on={"CHIP_ID": chip_id})

    def reset(self) -> None:
        with self._lock:
            self._generation = 0
            self.commands: list[Command] = []
            self.lost_writes: list[tuple[int, int, int]] = []  # (ns, register, value)
            self.config_errors: list[str] = []
            self.early_data_reads: list[tuple[int, int]] = []  # (ns, register)
            self._busy_until = -1
            self._last_write: int | None = None
            self._starting: dict[str, int] = {}  # sensor: ns its start-up ends
            super().reset()
            self._apply_pins()

    # The interrupt pins: the harness sets `int1` / `int2` to the GPIO lines

    def _set_line(self, pin: int, line: Line | None) -> None:
        output = self._outputs[pin]
        if output.wire is not None:
            output.wire.disconnect(output)
        self._lines[pin] = line
        if line is not None:
            wire = Wire()
            wire.connect(output)
            wire.line = line

    @property
    def int1(self) -> Line | None:
        return self._lines[1]

    @int1.setter
    def int1(self, line: Line | None) -> None:
        self._set_line(1, line)

    @property
    def int2(self) -> Line | None:
        return self._lines[2]

    @int2.setter
    def int2(self, line: Line | None) -> None:
        self._set_line(2, line)

    def int_output(self, pin: int) -> InterruptOutput:
        return self._outputs[pin]

    def pin_config(self, pin: int) -> dict[str, bool]:
        """INT_OUT_CTRL's and INT_LATCH's settings of a pin, by field name without `intN_`."""
        ctrl = self.regs[REG_INT_OUT_CTRL] >> (4 * (pin - 1))
        return {
            "output_en": bool(ctrl & 8),
            "od": bool(ctrl & 4),
            "lvl": bool(ctrl & 2),
            "edge_ctrl": bool(ctrl & 1),
            "input_en": bool(self.regs[REG_INT_LATCH] >> (3 + pin) & 1),
        }

    def drdy_mapped(self, pin: int) -> bool:
        field = INT1_DRDY if pin == 1 else INT2_DRDY
        return bool(field.get(self.regs[REG_INT_MAP_1]))

    def int_asserted(self, pin: int) -> bool:
        """The chip's logic for `pin`: data-ready pending, enabled, mapped, output enabled."""
        return (
            bool(DRDY_INT.get(self.regs[REG_INT_STATUS_1]))
            and self.drdy_mapped(pin)
            and self.pin_config(pin)["output_en"]
        )

    def _apply_pins(self) -> None:
        for pin, output in self._outputs.items():
            config = self.pin_config(pin)
            if config["output_en"]:
                output.drive = Drive.OPEN_DRAIN if config["od"] else Drive.PUSH_PULL
                output.polarity = Polarity.ACTIVE_HIGH if config["lvl"] else Polarity.ACTIVE_LOW
                output.set(self.int_asserted(pin))
            else:  # high impedance: an open-drain output that lets go
                output.set(False)
                output.drive = Drive.OPEN_DRAIN
                output.polarity = Polarity.ACTIVE_LOW

    # Power modes

    @property
    def acc_pmu(self) -> int:
        return ACC_PMU.get(self.regs[REG_PMU_STATUS])

    @property
    def gyr_pmu(self) -> int:
        return GYR_PMU.get(self.regs[REG_PMU_STATUS])

    def _set_pmu(self, field: Field, mode: int) -> None:
        self.regs[REG_PMU_STATUS] = field.set(self.regs[REG_PMU_STATUS], mode)

    def _suspended(self) -> bool:
        return self.acc_pmu != NORMAL and self.gyr_pmu != NORMAL

    def _transition(self, sensor: str, field: Field, mode: int, delay: int) -> None:
        now = self.clock.now()
        if delay <= 0 or not self.clock.simulated:
            self._set_pmu(field, mode)
            self._starting.pop(sensor, None)
            return
        generation = self._generation
        self._busy_until = now + delay
        self._starting[sensor] = now + delay

        def reached() -> None:
            with self._lock:
                if self._generation == generation:
                    self._set_pmu(field, mode)
                    self._starting.pop(sensor, None)

        self.clock.after(delay, reached)

    def _command(self, code: int) -> None:
        if code not in CMD_NAMES:
            raise ModelError(f"BMI160: CMD {code:#04x} is not a command (2.11.38: reserved)")
        now = self.clock.now()
        if self.clock.simulated and now < self._busy_until:
            # 2.11.38: a command while the previous one executes is dropped
            self.regs[REG_ERR_REG] = DROP_CMD_ERR.set(self.regs[REG_ERR_REG], 1)
            self.commands.append(Command(now, code, False))
            return
        self.commands.append(Command(now, code, True))
        if code == CMD_SOFTRESET:
            self._generation += 1
            self._busy_until = -1
            self._starting.clear()
            self.reset_registers()
            self._apply_pins()
        elif code == CMD_ACC_NORMAL:
            delay = ACC_STARTUP_NS if self.acc_pmu != NORMAL else 0
            self._transition("acc", ACC_PMU, NORMAL, delay)
            self._check_acc_conf()
        elif code in (CMD_ACC_SUSPEND, CMD_ACC_LOW_POWER):
            self._transition("acc", ACC_PMU, SUSPEND if code == CMD_ACC_SUSPEND else LOW_POWER, 0)
        elif code == CMD_GYR_NORMAL:
            mode = self.gyr_pmu
            delay = (
                0
                if mode == NORMAL
                else GYR_FAST_STARTUP_NS
                if mode == FAST_STARTUP
                else GYR_STARTUP_NS
            )
            self._transition("gyr", GYR_PMU, NORMAL, delay)
        elif code in (CMD_GYR_SUSPEND, CMD_GYR_FAST_STARTUP):
            self._transition(
                "gyr", GYR_PMU, SUSPEND if code == CMD_GYR_SUSPEND else FAST_STARTUP, 0
            )
        elif code == CMD_INT_RESET:
            self.regs[REG_INT_STATUS_1] = 0
            self._apply_pins()
        # CMD_FIFO_FLUSH: the FIFO is always empty here

    def _check_acc_conf(self) -> None:
        conf = self.regs[REG_ACC_CONF]
        odr = ACC_ODR.get(conf)
        if self.acc_pmu == NORMAL or "acc" in self._starting:
            if not ACC_US.get(conf) and odr < ACC_NORMAL_MIN_ODR_CODE:
                self.config_errors.append(
                    f"ACC_CONF {conf:#04x}: acc_odr {odr_hz(odr)} Hz in normal mode (acc_us = 0)"
                )
                self.regs[REG_ERR_REG] = ERR_CODE.set(self.regs[REG_ERR_REG], ERR_CODE_CONFIG)

    # Data

    def _data(self) -> dict[int, int]:
        """{address of an axis' LSB: value} of the sensors' current inputs."""
        values: dict[int, int] = {}
        acc_range = ACC_RANGE.get(self.regs[REG_ACC_RANGE])
        gyr_range = GYR_RANGE.get(self.regs[REG_GYR_RANGE])
        if self.acc_pmu == NORMAL:
            for i, g in enumerate(self.acceleration):
                values[REG_DATA_ACC_X_L + 2 * i] = acc_raw(g, acc_range)
        if self.gyr_pmu == NORMAL:
            for i, dps in enumerate(self.angular_rate):
                values[REG_DATA_GYR_X_L + 2 * i] = gyr_raw(dps, gyr_range)
        return values

    def _sample(self) -> None:
        for addr, value in self._data().items():
            self.regs[addr] = value & 0xFF
            self.regs[addr + 1] = (value >> 8) & 0xFF

    def data_ready(self) -> None:
        """A new sample of the sensors in normal mode is complete: latch it, set their
        data-ready flags, and (int_drdy_en) raise drdy_int, a new edge on the mapped pin."""
        with self._lock:
            self._sample()
            status = self.regs[REG_STATUS]
            if self.acc_pmu == NORMAL:
                status = DRDY_ACC.set(status, 1)
            if self.gyr_pmu == NORMAL:
                status = DRDY_GYR.set(status, 1)
            self.regs[REG_STATUS] = status
            if INT_DRDY_EN.get(self.regs[REG_INT_EN_1]) and status & (
                DRDY_ACC.mask | DRDY_GYR.mask
            ):
                # a new sample is a new pulse: the pin goes back before it asserts again
                self.regs[REG_INT_STATUS_1] = 0
                self._apply_pins()
                self.regs[REG_INT_STATUS_1] = DRDY_INT.set(0, 1)
            self._apply_pins()

    def value(self, addr: int) -> int:
        """The signed 16-bit value of the data register pair at `addr` (its LSB)."""
        return _s16(self.regs[addr] | self.regs[addr + 1] << 8)

    # Register access

    def reg_read(self, addr: int) -> int:
        with self._lock:
            if addr == REG_FIFO_DATA:
                super().reg_read(addr)
                return 0x80  # 2.5.1.2: an overread frame
            if REG_DATA_MAG_X_L <= addr <= REG_DATA_END and addr & 1 == 0:
                now = self.clock.now()
                sensor = (
                    "acc"
                    if addr >= REG_DATA_ACC_X_L
                    else "gyr"
                    if addr >= REG_DATA_GYR_X_L
                    else None
                )
                if sensor in self._starting:
                    self.early_data_reads.append((now, addr))
                if addr >= REG_DATA_GYR_X_L:
                    value = self._data().get(addr)
                    if value is not None:
                        self.regs[addr] = value & 0xFF
                        self.regs[addr + 1] = (value >> 8) & 0xFF
            return super().reg_read(addr)

    def on_read(self, reg: Register) -> None:
        addr = reg.address
        if addr == REG_ERR_REG:
            self.regs[addr] = 0  # 2.11.2: flags reset when read
        elif REG_DATA_GYR_X_L <= addr <= REG_DATA_END:
            field = DRDY_ACC if addr >= REG_DATA_ACC_X_L else DRDY_GYR
            self.regs[REG_STATUS] = field.set(self.regs[REG_STATUS], 0)
            if not self.regs[REG_STATUS] & (DRDY_ACC.mask | DRDY_GYR.mask):
                self.regs[REG_INT_STATUS_1] = DRDY_INT.set(self.regs[REG_INT_STATUS_1], 0)
                self._apply_pins()

    def reg_write(self, addr: int, val: int) -> None:
        with self._lock:
            now = self.clock.now()
            if self.clock.simulated and self._last_write is not None:
                idle = WRITE_IDLE_SUSPEND_NS if self._suspended() else WRITE_IDLE_NORMAL_NS
                if now - self._last_write < idle:
                    self.lost_writes.append((now, addr, val))
                    self._last_write = now
                    return
            self._last_write = now
            if addr == REG_ACC_RANGE and ACC_RANGE.get(val) not in ACC_RANGES:
                raise ModelError(
                    f"BMI160: ACC_RANGE {val:#04x}: acc_range {val & 0xF:#06b} is reserved"
                )
            if addr == REG_GYR_RANGE and GYR_RANGE.get(val) not in GYR_RANGES:
                raise ModelError(f"BMI160: GYR_RANGE {val:#04x}: gyr_range {val & 7} is reserved")
            if addr == REG_ACC_CONF and ACC_ODR.get(val) not in ACC_ODR_CODES:
                raise ModelError(f"BMI160: ACC_CONF {val:#04x}: acc_odr {val & 0xF} is reserved")
            if addr == REG_GYR_CONF and GYR_ODR.get(val) not in GYR_ODR_CODES:
                raise ModelError(f"BMI160: GYR_CONF {val:#04x}: gyr_odr {val & 0xF} is reserved")
            super().reg_write(addr, val)

    def on_write(self, reg: Register, old: int, new: int) -> None:
        addr = reg.address
        if addr == REG_CMD:
            self._command(new)
        elif addr == REG_ACC_CONF:
            self._check_acc_conf()
        elif addr in (REG_INT_OUT_CTRL, REG_INT_LATCH, REG_INT_MAP_1, REG_INT_EN_1):
            if addr == REG_INT_EN_1 and not INT_DRDY_EN.get(new):
                self.regs[REG_INT_STATUS_1] = DRDY_INT.set(self.regs[REG_INT_STATUS_1], 0)
            self._apply_pins()
