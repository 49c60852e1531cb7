"""TI OPT3001 ambient light sensor (datasheet SBOS681B): 16-bit big-endian registers.

The register map is the datasheet's section 7.6 (Register Maps), fields and
reset values from its tables 9-14. A conversion takes the time the CT field
selects (table 11: 100 ms or 800 ms) of the model's clock: at once unless the
guest runs on simulated time.
"""

from __future__ import annotations

from typing import Final

from roadtest.models.base import Input
from roadtest.models.regmap import RO, Field, MappedSMBusModel, Register, RegisterMap
from roadtest.simtime.clock import NS_PER_MS

EXPONENT: Final = Field("E", 15, 12)
FRACTION: Final = Field("R", 11, 0)
M: Final = Field("M", 10, 9, values={"SHUTDOWN": 0b00, "SINGLE": 0b01, "CONTINUOUS": 0b10})
# OVF, CRF, FH and FL are status bits: the host cannot write them.
CRF: Final = Field("CRF", 7, access=RO)
CT: Final = Field("CT", 11, values={"100MS": 0, "800MS": 1})
# Table 11, CT: "0 = 100 ms, 1 = 800 ms".
CONVERSION_TIME_NS: Final = {0: 100 * NS_PER_MS, 1: 800 * NS_PER_MS}

REGISTERS: Final = RegisterMap(
    [
        Register("RESULT", 0x00, 0x0000, RO, (EXPONENT, FRACTION)),
        Register(
            "CONFIGURATION",
            0x01,
            0xC810,
            fields=(
                Field("RN", 15, 12),
                CT,
                M,
                Field("OVF", 8, access=RO),
                CRF,
                Field("FH", 6, access=RO),
                Field("FL", 5, access=RO),
                Field("L", 4, values={"HYSTERESIS": 0, "LATCHED": 1}),
                Field("POL", 3, values={"ACTIVE_LOW": 0, "ACTIVE_HIGH": 1}),
                Field("ME", 2),
                Field("FC", 1, 0),
            ),
        ),
        Register("LOW_LIMIT", 0x02, 0xC000, fields=(Field("LE", 15, 12), Field("TL", 11, 0))),
        Register("HIGH_LIMIT", 0x03, 0xBFFF, fields=(Field("HE", 15, 12), Field("TH", 11, 0))),
        Register("MANUFACTURER_ID", 0x7E, 0x5449, RO),  # "TI"
        Register("DEVICE_ID", 0x7F, 0x3001, RO),
    ],
    width=16,
    byteorder="big",
)
# M's bits in place, for the per-write check.
M_SHUTDOWN: Final = M.set(0, "SHUTDOWN")
M_SINGLE: Final = M.set(0, "SINGLE")
RESULT: Final = REGISTERS["RESULT"]
CONFIGURATION: Final = REGISTERS["CONFIGURATION"]
REG_RESULT: Final = RESULT.address


class OPT3001(MappedSMBusModel):
    """`result` is what a conversion measures; it is in RESULT, with CRF set, once the
    conversion time has passed on the model's clock.

    Simplified: no interrupt pin, no limit comparisons (FH/FL stay 0), no overflow, and
    continuous mode converts once. `conversion_times` is the datasheet's, by CT; a test
    may make the part slower. For tests, `conversions` holds when each conversion started
    (ns of the clock) and `ready_reads` when the driver read CONFIGURATION and found CRF
    set.
    """

    register_map = REGISTERS
    result = Input[int](bits=16, initial=0x0000)  # the RESULT register

    def __init__(self) -> None:
        super().__init__()
        self.conversion_times = dict(CONVERSION_TIME_NS)
        self.conversions: list[int] = []
        self.ready_reads: list[int] = []
        self._conversion = 0  # which conversion may complete: a new config cancels one

    def reset(self) -> None:
        super().reset()
        self._conversion = getattr(self, "_conversion", 0) + 1  # none in flight completes

    def on_read(self, reg: Register) -> None:
        if reg is CONFIGURATION:
            if self.regs[CONFIGURATION.address] & CRF.mask:
                self.ready_reads.append(self.clock.now())
            # Reading the configuration register clears the conversion-ready flag.
            self.regs[CONFIGURATION.address] &= ~CRF.mask

    def on_write(self, reg: Register, old: int, new: int) -> None:
        if reg is not CONFIGURATION:
            return
        config = new & ~CRF.mask  # writing the configuration register also clears CRF
        self.regs[CONFIGURATION.address] = config
        self._conversion += 1
        if config & M.mask != M_SHUTDOWN:
            conversion = self._conversion
            self.conversions.append(self.clock.now())
            delay = self.conversion_times[CT.get(config)]
            self.clock.after(delay, lambda: self._converted(conversion))

    def _converted(self, conversion: int) -> None:
        if conversion != self._conversion:
            return  # the driver changed the configuration meanwhile
        config = self.regs[CONFIGURATION.address] | CRF.mask
        self.regs[RESULT.address] = self.result
        if config & M.mask == M_SINGLE:
            # After a single-shot conversion the device returns to shutdown.
            config = (config & ~M.mask) | M_SHUTDOWN
        self.regs[CONFIGURATION.address] = config
