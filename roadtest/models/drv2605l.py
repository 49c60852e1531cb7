"""TI DRV2605L haptic driver for ERM and LRA actuators: 8-bit registers over I2C.

From the DRV2605L datasheet (SLOS854C, May 2014, revised September 2014), "Register Map"
(from memory of it: the document itself was not at hand when this was written; check
the facts below against it):

- STATUS (0x00, read-only): DEVICE_ID in bits 7..5 (7 for the DRV2605L), DIAG_RESULT
  (bit 3: 1 when the last auto-calibration failed), OVER_TEMP (bit 1), OC_DETECT (bit 0).
- MODE (0x01): DEV_RESET (bit 7), STANDBY (bit 6, set at power-on: reset value 0x40),
  MODE[2:0] (7: auto-calibration, 5: real-time playback).
- GO (0x0C), bit 0: fires the process MODE selects and "clears automatically when the
  process is complete"; writing 0 stops it.
- CONTROL4 (0x1E): AUTO_CAL_TIME in bits 5..4 (reset value 0x20: 2), the length of an
  auto-calibration: 150 to 350 ms, 250 to 450 ms, 500 to 700 ms or 1000 to 1200 ms.

Only what the tests need: an auto-calibration fired with GO ends, GO cleared and
DIAG_RESULT 0 (passed), after the longest time its AUTO_CAL_TIME allows. The other
registers are storage; their reset values, which no test reads, are taken as 0 but for
LIBRARY_SEL's (0x01). No playback, diagnostics, overcurrent or resonance tracking.
"""

from __future__ import annotations

from typing import Final

from roadtest.models.base import Input
from roadtest.models.regmap import RO, Field, MappedSMBusModel, Register, RegisterMap
from roadtest.simtime.clock import NS_PER_MS

DEVICE_ID: Final = Field("DEVICE_ID", 7, 5, values={"DRV2604": 4, "DRV2604L": 6, "DRV2605L": 7})
DIAG_RESULT: Final = Field("DIAG_RESULT", 3)
MODE_FIELD: Final = Field(
    "MODE",
    2,
    0,
    values={
        "INTERNAL_TRIGGER": 0,
        "EXT_TRIGGER_EDGE": 1,
        "EXT_TRIGGER_LEVEL": 2,
        "PWM_ANALOG": 3,
        "AUDIO_TO_VIBE": 4,
        "REAL_TIME_PLAYBACK": 5,
        "DIAGNOSTICS": 6,
        "AUTO_CALIBRATION": 7,
    },
)
STANDBY: Final = Field("STANDBY", 6)
GO_BIT: Final = Field("GO", 0)
AUTO_CAL_TIME: Final = Field("AUTO_CAL_TIME", 5, 4)

# The longest auto-calibration each AUTO_CAL_TIME allows.
AUTO_CAL_MAX_MS: Final = (350, 450, 700, 1200)

REGISTERS: Final = RegisterMap(
    [
        Register(
            "STATUS",
            0x00,
            DEVICE_ID.set(0, "DRV2605L"),
            RO,
            fields=(
                DEVICE_ID,
                DIAG_RESULT,
                Field("OVER_TEMP", 1),
                Field("OC_DETECT", 0),
            ),
        ),
        Register("MODE", 0x01, STANDBY.mask, fields=(Field("DEV_RESET", 7), STANDBY, MODE_FIELD)),
        Register("RTP_INPUT", 0x02),
        Register("LIBRARY_SEL", 0x03, 0x01),
        *(Register(f"WAV_FRM_SEQ{n}", 0x03 + n) for n in range(1, 9)),
        Register("GO", 0x0C, fields=(GO_BIT,)),
        Register("ODT", 0x0D),
        Register("SPT", 0x0E),
        Register("SNT", 0x0F),
        Register("BRT", 0x10),
        Register("ATV_CONTROL", 0x11),
        Register("ATV_MIN_INPUT", 0x12),
        Register("ATV_MAX_INPUT", 0x13),
        Register("ATV_MIN_OUTPUT", 0x14),
        Register("ATV_MAX_OUTPUT", 0x15),
        Register("RATED_VOLTAGE", 0x16),
        Register("OD_CLAMP", 0x17),
        Register("A_CAL_COMP", 0x18),
        Register("A_CAL_BEMF", 0x19),
        Register("FEEDBACK_CONTROL", 0x1A),
        Register("CONTROL1", 0x1B),
        Register("CONTROL2", 0x1C),
        Register("CONTROL3", 0x1D),
        Register("CONTROL4", 0x1E, AUTO_CAL_TIME.set(0, 2), fields=(AUTO_CAL_TIME,)),
        Register("CONTROL5", 0x1F),
        Register("LRA_OPEN_LOOP_PERIOD", 0x20),
        Register("VBAT", 0x21, access=RO),
        Register("LRA_PERIOD", 0x22, access=RO),
    ]
)
STATUS: Final = REGISTERS["STATUS"]
MODE: Final = REGISTERS["MODE"]
GO: Final = REGISTERS["GO"]
CONTROL4: Final = REGISTERS["CONTROL4"]


class DRV2605L(MappedSMBusModel):
    """The chip's registers and its auto-calibration.

    `calibration_ends`: False for a chip whose auto-calibration never ends (a chip that
    hangs, a bus that reads GO as 1): GO stays set.
    """

    register_map = REGISTERS
    calibration_ends = Input[bool](initial=True)

    def __init__(self) -> None:
        super().__init__()
        self.go_written_at: list[int] = []  # the clock when the host set GO
        self.go_read_at: list[int] = []  # the clock at each read of GO

    def reset(self) -> None:
        super().reset()
        self.go_written_at = []
        self.go_read_at = []

    @property
    def calibrations(self) -> int:
        """The auto-calibrations the host fired."""
        return len(self.go_written_at)

    def on_read(self, reg: Register) -> None:
        if reg is GO:
            self.go_read_at.append(self.clock.now())

    def on_write(self, reg: Register, old: int, new: int) -> None:
        if reg is not GO or not GO_BIT.get(new) or GO_BIT.get(old):
            return
        mode = self.regs[MODE.address]
        if STANDBY.get(mode) or MODE_FIELD.get(mode) != MODE_FIELD.values["AUTO_CALIBRATION"]:
            return
        self.go_written_at.append(self.clock.now())
        if not self.calibration_ends:
            return
        duration = AUTO_CAL_MAX_MS[AUTO_CAL_TIME.get(self.regs[CONTROL4.address])] * NS_PER_MS
        self.clock.after(duration, self._calibrated)

    def _calibrated(self) -> None:
        self.regs[GO.address] = GO_BIT.set(self.regs[GO.address], 0)
        self.regs[STATUS.address] = DIAG_RESULT.set(self.regs[STATUS.address], 0)
