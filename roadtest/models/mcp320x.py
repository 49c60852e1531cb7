"""Microchip MCP3001/3002/3004/3008 (10-bit) and MCP3201/3202/3204/3208 (12-bit) ADCs
(datasheets DS21293 MCP3001, DS21294 MCP3002, DS21295 MCP3004/3008, DS21290 MCP3201,
DS21034 MCP3202, DS21298 MCP3204/3208): stream ADCs with no registers.

Section 5 of each datasheet ("Serial Communications") and the figures of section 6 ("Using
the ... with Microcontroller SPI Ports", 8-bit segments), counted in clocks from the chip
select's falling edge; the host latches DOUT on each rising edge (SPI mode 0,0 or 1,1; the
chips shift out on the falling edge), so "clock k" below is the bit the host reads at the
k-th rising edge:

- MCP3x02/3x04/3x08 take a command on DIN: leading zeros are ignored, the first clock
  with DIN high is the start bit (clock s). Then the configuration bits, one a clock:
  SGL/DIFF, ODD/SIGN, MSBF on the MCP3x02; SGL/DIFF, D2, D1, D0 on the MCP3x04/3x08 (D2
  is "don't care" on the 4-channel parts). The MCP3x04/3x08 take one more clock to end
  the sample ("once the D0 bit is input, one more clock is required to complete the
  sample and hold period"); the MCP3x02's sample ends within its MSBF clock. Then DOUT
  gives the null bit (a 0: clock s+4 on the MCP3x02, s+6 on the MCP3x04/3x08), then the
  result MSB first, B(n-1)..B0. DOUT is high impedance until the null bit ("the output is
  at high impedance until the null bit is clocked out").
- MCP3x01 have no DIN: the sample takes the first clocks, DOUT is high impedance for
  clocks 1 and 2, the null bit is clock 3 and the MSB clock 4 ("two unknown bits (the
  output is at high-impedance for the first two clocks), the null bit and the highest
  order five bits": MCP3201 Figure 6-1).
- After B0, further clocks with the chip select low give the result again LSB first,
  B1..B(n-1) (B0 is not repeated: MCP3004/3008 Figure 5-2, MCP3001/3201 Figure 6-1's "B1
  bit repeated"), then zeros indefinitely. The MCP3x02 does so only if MSBF was 0; with
  MSBF 1 it gives zeros after B0 (DS21034D section 5.1).

Channel selection (Tables 5-1/5-2): single-ended, the channel is the configuration's
ODD (MCP3x02), D1 D0 (MCP3x04), D2 D1 D0 (MCP3x08). Pseudo-differential (SGL/DIFF 0),
the pair is channels 2k and 2k+1 (k from D2 D1) and the last bit picks IN+: 0 the even
channel (CH2k = IN+, CH2k+1 = IN-), 1 the odd one. The MCP3x01 is always
pseudo-differential, IN+ against IN-, here channels 0 and 1 (`ch0`, `ch1`).

The transfer function (section 4, "Digital Output Code"): code = 2^n * VIN / VREF, VIN
the selected channel (single-ended, against VSS) or IN+ - IN- (pseudo-differential). A
VIN below 0 (IN- above IN+) reads 0 ("the resulting code will be 000h"), one at or above
VREF the full scale 2^n - 1. The MCP3002 and MCP3202 have no VREF pin: VDD is their
reference, which is `vref` here too.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Final

from roadtest.models.base import (
    VIRTIO_SPI_CPHA,
    VIRTIO_SPI_CPOL,
    VIRTIO_SPI_CS_HIGH,
    VIRTIO_SPI_MODE_LSB_FIRST,
    Input,
    ModelError,
    SPIModel,
    word_bytes,
)

CHANNELS_MAX: Final = 8


@dataclass(frozen=True)
class Part:
    """One part's parameters: its analog inputs, resolution and command layout.

    `config_bits`: the configuration bits after the start bit (0: the part has no DIN).
    `sample_clocks`: clocks after the configuration bits before the null bit's clock.
    `msbf`: the last configuration bit is MSBF (MCP3x02), not a channel bit.
    `channel_bits`: how many configuration bits after SGL/DIFF select the channel, and of
    those, `ignored_bits` leading ones that are "don't care" (D2 on the MCP3x04)."""

    name: str
    channels: int
    bits: int
    config_bits: int
    sample_clocks: int
    msbf: bool = False
    ignored_bits: int = 0


# MCP3x01: no command; 2 clocks high impedance, the null bit at clock 3.
MCP3001: Final = Part("mcp3001", channels=2, bits=10, config_bits=0, sample_clocks=2)
MCP3201: Final = Part("mcp3201", channels=2, bits=12, config_bits=0, sample_clocks=2)
# MCP3x02: start, SGL/DIFF, ODD/SIGN, MSBF; the null bit at start + 4.
MCP3002: Final = Part("mcp3002", channels=2, bits=10, config_bits=3, sample_clocks=0, msbf=True)
MCP3202: Final = Part("mcp3202", channels=2, bits=12, config_bits=3, sample_clocks=0, msbf=True)
# MCP3x04/3x08: start, SGL/DIFF, D2, D1, D0, one sample clock; the null bit at start + 6.
MCP3004: Final = Part(
    "mcp3004", channels=4, bits=10, config_bits=4, sample_clocks=1, ignored_bits=1
)
MCP3008: Final = Part("mcp3008", channels=8, bits=10, config_bits=4, sample_clocks=1)
MCP3204: Final = Part(
    "mcp3204", channels=4, bits=12, config_bits=4, sample_clocks=1, ignored_bits=1
)
MCP3208: Final = Part("mcp3208", channels=8, bits=12, config_bits=4, sample_clocks=1)

PARTS: Final = {
    p.name: p for p in (MCP3001, MCP3002, MCP3004, MCP3008, MCP3201, MCP3202, MCP3204, MCP3208)
}


def _exact(volts: float) -> Fraction:
    """A voltage as the decimal the test wrote (1.65 is 33/20, not the nearest double)."""
    return Fraction(repr(volts)) if isinstance(volts, float) else Fraction(volts)


class MCP320x(SPIModel):
    """One MCP3xxx part (`part`, from `PARTS`). The test sets the channels' voltages (`ch0`
    .. `ch7`, volts; a part with fewer channels ignores the rest; the MCP3x01's IN+ is
    `ch0`, IN- `ch1`) and the reference `vref` (volts: the VREF pin, VDD on the MCP3x02).

    `high_impedance` is what the host reads while DOUT is high impedance (before the null
    bit): 1 where MISO has a pull-up (the bus's idle line, as for the TMP121), 0 where it
    has a pull-down.

    Simplified: the conversion is of the voltages at the moment the channel is known (a
    sample at once), and the timing limits (clock rate, the minimum chip-select high
    time) are not checked. A mode other than 0,0 or 1,1, LSB-first or an active-high chip
    select fails the transfer: the chip shifts out on falling edges, MSB first, and its
    CS is active low."""

    ch0 = Input[float](initial=0.0)
    ch1 = Input[float](initial=0.0)
    ch2 = Input[float](initial=0.0)
    ch3 = Input[float](initial=0.0)
    ch4 = Input[float](initial=0.0)
    ch5 = Input[float](initial=0.0)
    ch6 = Input[float](initial=0.0)
    ch7 = Input[float](initial=0.0)
    vref = Input[float](initial=3.3)

    def __init__(self, part: Part, high_impedance: int = 1) -> None:
        self.part = part
        self.high_impedance = high_impedance
        self.ch0 = self.ch1 = self.ch2 = self.ch3 = 0.0
        self.ch4 = self.ch5 = self.ch6 = self.ch7 = 0.0
        self.vref = 3.3
        self.conversions = 0  # results clocked out (to their null bit), for tests
        self._out: list[int] | None = None  # the null bit and the result, once known
        self._select()

    # What the chip computes

    def voltage(self, channel: int) -> float:
        if not 0 <= channel < min(self.part.channels, CHANNELS_MAX):
            raise ModelError(f"{self.part.name} has no channel {channel}")
        value: float = getattr(self, f"ch{channel}")
        return value

    def code(self, plus: int, minus: int | None = None) -> int:
        """The result for IN+ = channel `plus` against channel `minus` (None: VSS)."""
        vin = _exact(self.voltage(plus))
        if minus is not None:
            vin -= _exact(self.voltage(minus))
        vref = _exact(self.vref)
        if vref <= 0:
            raise ModelError(f"{self.part.name}: VREF {self.vref} V is not above 0")
        full = (1 << self.part.bits) - 1
        return max(0, min(full, int(vin * (1 << self.part.bits) / vref)))

    def _result(self, config: int) -> None:
        """The configuration bits are in (`config`, MSB first): the conversion is known."""
        part = self.part
        if part.config_bits == 0:
            code = self.code(0, 1)
            lsb_first = True
        else:
            single = bool(config >> (part.config_bits - 1) & 1)
            select_bits = part.config_bits - 1 - int(part.msbf)
            select = config >> int(part.msbf) & ((1 << select_bits) - 1)
            select &= (1 << (select_bits - part.ignored_bits)) - 1
            lsb_first = not (part.msbf and config & 1)
            if single:
                code = self.code(select)
            else:
                even = select & ~1
                plus, minus = (even + 1, even) if select & 1 else (even, even + 1)
                code = self.code(plus, minus)
        n = part.bits
        msb_first = [code >> (n - 1 - i) & 1 for i in range(n)]
        lsb_tail = [code >> i & 1 for i in range(1, n)] if lsb_first else []
        self._out = [0, *msb_first, *lsb_tail]  # the null bit, then the data
        self.conversions += 1

    # The bit stream

    def _select(self) -> None:
        self._started = self.part.config_bits == 0  # the MCP3x01 starts at the select
        self._config = 0
        self._config_seen = 0
        self._wait = self.part.sample_clocks  # high-impedance clocks before the null bit
        self._out = None
        self._sent = 0

    def _clock(self, din: int) -> int:
        """One clock: the chip reads `din` and the host reads what this returns."""
        part = self.part
        if self._out is not None:
            bit = self._out[self._sent] if self._sent < len(self._out) else 0
            self._sent += 1
            return bit
        if not self._started:
            self._started = bool(din)  # leading zeros are ignored; the first 1 starts
            return self.high_impedance
        if self._config_seen < part.config_bits:
            self._config = self._config << 1 | din
            self._config_seen += 1
            if self._config_seen == part.config_bits and self._wait == 0:
                self._result(self._config)
            return self.high_impedance
        if self._wait > 0:
            self._wait -= 1
            if self._wait == 0:
                self._result(self._config)
            return self.high_impedance
        raise AssertionError("unreachable: the result is ready after the sample clocks")

    # SPIModel

    def select(self) -> None:
        self._select()

    def transfer(self, tx: bytes | None, length: int, mode: int, bits_per_word: int) -> bytes:
        cpha, cpol = bool(mode & VIRTIO_SPI_CPHA), bool(mode & VIRTIO_SPI_CPOL)
        if cpha != cpol:
            raise ModelError(
                f"{self.part.name}: SPI mode {int(cpol)},{int(cpha)}: the chip takes mode "
                "0,0 or 1,1 only (it shifts DOUT out on the clock's falling edge)"
            )
        if mode & VIRTIO_SPI_MODE_LSB_FIRST:
            raise ModelError(f"{self.part.name}: LSB first on the wire; the chip is MSB first")
        if mode & VIRTIO_SPI_CS_HIGH:
            raise ModelError(f"{self.part.name}: its chip select is active low")
        size = word_bytes(bits_per_word)
        out = bytearray()
        for start in range(0, length, size):
            word = int.from_bytes(tx[start : start + size], "big") if tx is not None else 0
            value = 0
            for i in range(bits_per_word - 1, -1, -1):
                value = value << 1 | self._clock(word >> i & 1)
            out += value.to_bytes(size, "big")
        return bytes(out)
