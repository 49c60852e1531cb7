"""Maxim MAX17048/MAX17049 fuel gauge (datasheet 19-6171 Rev 7, 11/16), and the register
subset the MAX17043/MAX17044 share (datasheet 19-4721, Compact, Low-Cost 1S/2S Fuel Gauges
with Low-Battery Alert): 16-bit big-endian registers at even addresses.

From the datasheets:

- VCELL (02h): the MAX17048 reads 78.125 uV a bit (1 cell), the MAX17049 156.25 uV
  (2 cells), all 16 bits. (The MAX17043/MAX17044: 12 bits, 15:4, 1.25 mV / 2.50 mV.)
- SOC (04h): the high byte is whole percent, the low byte 1/256 %.
- CONFIG (0Ch), reset 971Ch: RCOMP 15:8 (97h), SLEEP 7, ALSC 6 (MAX17048/9: alert on a
  1 % SOC change), ALRT 5 (the alert flag: set by the IC, cleared only by software),
  ATHD 4:0 (the empty-alert threshold in two's complement: 00000 = 32 %, 11111 = 1 %;
  1Ch = 4 % at power-up).
- ALRT pin: open-drain, active low, asserted while CONFIG.ALRT is 1.
- STATUS (1Ah), high byte: RI 8 (reset indicator, set at power-up), VH 9, VL 10, VR 11,
  HD 12 (SOC low: SOC crossed the ATHD threshold), SC 13 (SOC changed by 1 %, with ALSC);
  EnVR 14. The flags are cleared by the host writing 0.
- COMMAND (FEh): 5400h is the power-on-reset command.

Not checked against a page here (recalled, said so): VERSION's value (the model's 0012h is
an example of the MAX17048's 001xh), HIBRT's (8030h), VALRT's (00FFh) and VRESET/ID's
(9600h) reset values; the MAX17048's MODE bits. Not modelled: hibernate, the voltage
alerts (VH, VL, VR), quick-start, sleep, the model TABLE (40h-7Fh). The ModelGauge
algorithm itself is not modelled: a test sets `vcell` and `soc` (raw register values),
and the alerts follow from a new `soc` at once.
"""

from __future__ import annotations

from typing import Final

from roadtest.models.base import Input
from roadtest.models.interrupt import Drive, InterruptPin, Polarity
from roadtest.models.regmap import RO, WO, Field, MappedSMBusModel, Register, RegisterMap

RCOMP: Final = Field("RCOMP", 15, 8)
SLEEP: Final = Field("SLEEP", 7)
ALSC: Final = Field("ALSC", 6)
ALRT: Final = Field("ALRT", 5)
ATHD: Final = Field("ATHD", 4, 0)

RI: Final = Field("RI", 8)
VH: Final = Field("VH", 9)
VL: Final = Field("VL", 10)
VR: Final = Field("VR", 11)
HD: Final = Field("HD", 12)
SC: Final = Field("SC", 13)
ENVR: Final = Field("EnVR", 14)

POR_COMMAND: Final = 0x5400
CONFIG_RESET: Final = 0x971C
# VCELL's weight in microvolts per bit.
VCELL_UV_PER_BIT: Final = {"max17048": 78.125, "max17049": 156.25}

REGISTERS: Final = RegisterMap(
    [
        Register("VCELL", 0x02, 0x0000, RO),
        Register("SOC", 0x04, 0x0000, RO),
        Register("MODE", 0x06, 0x0000),
        Register("VERSION", 0x08, 0x0012, RO),
        Register("HIBRT", 0x0A, 0x8030),
        Register("CONFIG", 0x0C, CONFIG_RESET, fields=(RCOMP, SLEEP, ALSC, ALRT, ATHD)),
        Register("VALRT", 0x14, 0x00FF),
        Register("CRATE", 0x16, 0x0000, RO),
        Register("VRESET_ID", 0x18, 0x9600),
        Register("STATUS", 0x1A, RI.mask, fields=(RI, VH, VL, VR, HD, SC, ENVR)),
        Register("CMD", 0xFE, 0x0000, WO),
    ],
    width=16,
    byteorder="big",
)
VCELL: Final = REGISTERS["VCELL"]
SOC: Final = REGISTERS["SOC"]
CONFIG: Final = REGISTERS["CONFIG"]
STATUS: Final = REGISTERS["STATUS"]
CMD: Final = REGISTERS["CMD"]


def athd_percent(athd: int) -> int:
    """The threshold ATHD sets: two's complement of 32 % (00000 = 32 %, 11111 = 1 %)."""
    return 32 - athd


class MAX17048(InterruptPin, MappedSMBusModel):
    """`vcell` and `soc` are the VCELL and SOC registers' raw values.

    A new `soc` whose whole percent differs from the last one sets STATUS.SC and
    CONFIG.ALRT when CONFIG.ALSC is set; one that falls below the ATHD threshold from at
    or above it sets STATUS.HD and CONFIG.ALRT. ALRT (the pin, `irq`) is asserted while
    CONFIG.ALRT is set. The POR command (5400h to COMMAND) resets every register; for
    tests, `resets` counts them and `commands` holds every value written to COMMAND.
    """

    register_map = REGISTERS
    int_polarity = Polarity.ACTIVE_LOW
    int_drive = Drive.OPEN_DRAIN

    vcell = Input[int](bits=16, initial=0x0000)
    soc = Input[int](bits=16, initial=0x0000)

    def __init__(self) -> None:
        self.resets = 0
        self.commands: list[int] = []
        super().__init__()

    @property
    def int_asserted(self) -> bool:
        return bool(self.regs[CONFIG.address] & ALRT.mask)

    def reset(self) -> None:
        super().reset()
        self.update_int()

    def __setattr__(self, name: str, value: object) -> None:
        if name in ("vcell", "soc") and "regs" in self.__dict__:
            old = self.regs[SOC.address]
            super().__setattr__(name, value)
            reg = VCELL if name == "vcell" else SOC
            self.regs[reg.address] = getattr(self, name)
            if name == "soc":
                self._soc_changed(old, self.regs[SOC.address])
            return
        super().__setattr__(name, value)

    def _soc_changed(self, old: int, new: int) -> None:
        config = self.regs[CONFIG.address]
        status = self.regs[STATUS.address]
        old_pct, new_pct = old >> 8, new >> 8
        threshold = athd_percent(ATHD.get(config))
        alert = False
        if config & ALSC.mask and old_pct != new_pct:
            status |= SC.mask
            alert = True
        if new_pct < threshold <= old_pct:
            status |= HD.mask
            alert = True
        if alert:
            self.regs[STATUS.address] = status
            self.regs[CONFIG.address] = config | ALRT.mask
            self.update_int()

    def on_write(self, reg: Register, old: int, new: int) -> None:
        if reg is CONFIG:
            self.update_int()
        elif reg is CMD:
            self.commands.append(new)
            if new == POR_COMMAND:
                self.resets += 1
                self.reset_registers()
                self.regs[VCELL.address] = self.vcell
                self.regs[SOC.address] = self.soc
                self.update_int()
