"""NXP PCF8574/PCF8574A (8-bit) and PCF8575 (16-bit) remote I/O expanders for the I2C bus.

Datasheets: NXP "PCF8574; PCF8574A Remote 8-bit I/O expander for I2C-bus with interrupt",
product data sheet Rev. 5 (27 May 2013), and NXP "PCF8575 Remote 16-bit I/O expander for
I2C-bus with interrupt", product data sheet (Rev. 5 as cited here). Section names and the
facts below are from those documents as remembered (neither was at hand while this was
written); where TI's second-source data sheets (SCPS068, SCPS069, SCPS121) say the same,
that is noted. Which facts rest on memory alone is said next to them.

The chip has no registers, no command byte and no pointer: after its address, a write's
data bytes go to the port, and a read's bytes come from it ("Functional description";
TI: "This device does not have internal configuration or status registers").

- **The quasi-bidirectional port** ("I/O programming", "Quasi-bidirectional I/Os"): each
  pin has an output latch. A latch of 0 drives the pin low (strongly); a latch of 1 lets
  a weak current source (about 100 uA) pull it high, which is how a pin is used as an
  input: something outside may pull it low. At power-on every latch is 1, "the I/Os are
  high" ("Power-on reset"). A read returns the pins' levels, not the latches: 0 where the
  latch drives low, the outside's level where the latch is 1. `pins` is what the outside
  does: 1 where nothing pulls the pin low (the current source wins), 0 where it pulls it
  low. So `port() == latch & pins`.
- **Framing**: PCF8574: every data byte of a write is P7..P0 (bit 0 is P0), each acked
  byte put on the port in turn (Fig. "Write mode (output)": DATA 1, DATA 2 ... each valid
  after its acknowledge; a STOP keeps the last one); each byte of a read is the port
  sampled at that byte's acknowledge (Fig. "Read mode (input)"). PCF8575: bytes come in
  pairs, the first P07..P00, the second P17..P10, then P07..P00 again ("Every data
  transmission from the PCF8575 must consist of an even number of bytes"), so in a
  16-bit port value P00 is bit 0 and P17 bit 15 (the driver's le16).
- **Interrupt** ("Interrupt output (INT)"): INT is an open-drain output, active low. It
  is asserted when an input pin changes ("any rising or falling edge of the port inputs
  in the input mode"), and released ("Resetting and reactivating the interrupt circuit")
  when the port goes back to its original setting, or when the port is read or written;
  "a pin configured as an output cannot cause an interrupt" (from memory of the NXP
  text; TI's has the rest word for word). The model keeps the port's state at the last
  read or write (or power-on) and asserts INT while an input pin (latch 1) differs from
  it.

Simplified or not modelled: the timing of INT (t_v(INT), t_rst(INT): about 4 us, taken as
instant) and of the port (t_v(Q), data valid after the ack: instant); the PCF8575's
per-byte update within a pair (a pair is put on the port at its second byte); the
strong pull-up's transient; an outside circuit that drives a pin high against a latch
of 0 (the datasheet warns of the large current; here the outside only pulls low or lets
go, so the low latch wins); a read ends wherever the host stops clocking, a 16-bit read
may end after its first byte (the "even number of bytes" rule is enforced on writes,
which would otherwise leave P1x unwritten). A write with no data bytes (an address-only
"quick" write) changes nothing, and does not release INT (no data byte, no data
acknowledge): the interrupt reset comes "at the acknowledge bit" of a data byte.

ModelError (the driver did what the chip cannot): a PCF8575 write of an odd number of
data bytes.
"""

from __future__ import annotations

import threading
from typing import ClassVar, Final

from roadtest.models.base import I2CModel, Input, ModelError
from roadtest.models.interrupt import Drive, InterruptPin, Polarity

# The I2C addresses by the address pins A2..A0 ("Device address"): 0100 A2 A1 A0 for the
# PCF8574 and the PCF8575, 0111 A2 A1 A0 for the PCF8574A.
PCF8574_ADDRESSES: Final = tuple(range(0x20, 0x28))
PCF8574A_ADDRESSES: Final = tuple(range(0x38, 0x40))
PCF8575_ADDRESSES: Final = tuple(range(0x20, 0x28))


def _set_pins(model: PCF857x, value: int) -> None:
    # A helper outside the class: Input reports a set whose caller's frame has no
    # `self` of the model as the test's (an `inject` marker in a recording).
    object.__setattr__(model, "pins", value)


class PCF857x(InterruptPin, I2CModel):
    """A quasi-bidirectional port of `ports` pins, and its INT output.

    `latch` is the output latches (1: high, weak pull-up, usable as input; 0: driven
    low), `pins` what the outside does to each pin (1: lets it be pulled up, 0: pulls it
    low; set by the test), `port()` the levels on the pins. `writes` logs every port
    value the driver wrote (16-bit values for the PCF8575), `reads` counts the bytes it
    read. `irq` is the GPIO line INT drives (active low, open drain).
    """

    ports: ClassVar[int] = 8
    int_polarity = Polarity.ACTIVE_LOW
    int_drive = Drive.OPEN_DRAIN

    pins = Input[int]()

    def __init__(self, pins: int | None = None) -> None:
        self.mask = (1 << self.ports) - 1
        self._lock = threading.RLock()
        self.writes: list[int] = []
        self.reads = 0
        self.latch = self.mask
        self.__dict__["pins"] = self.mask if pins is None else self._check(pins)
        self._reference = self.port()

    def _check(self, pins: int) -> int:
        if not isinstance(pins, int) or not 0 <= pins <= self.mask:
            raise ModelError(
                f"{type(self).__name__}: pins {pins!r} is not a {self.ports}-bit value"
            )
        return pins

    def __setattr__(self, name: str, value: object) -> None:
        if name != "pins":
            super().__setattr__(name, value)
            return
        if not isinstance(value, int):
            raise ModelError(f"{type(self).__name__}: pins must be an int, not {value!r}")
        self._check(value)
        with self._lock:
            _set_pins(self, value)
            self.update_int()

    def reset(self) -> None:
        """Power-on reset: every latch 1 (the I/Os high), INT released."""
        with self._lock:
            self.latch = self.mask
            self.__dict__["pins"] = self.mask
            self.writes = []
            self.reads = 0
            self._reference = self.port()
            self.update_int()

    # The port

    def port(self) -> int:
        """The pins' levels: low where the latch drives low or the outside pulls low."""
        return self.latch & self.pins

    @property
    def int_asserted(self) -> bool:
        # An output (latch 0) cannot cause an interrupt; the others assert INT while
        # they differ from the port as last read or written.
        if "_reference" not in self.__dict__:
            return False
        return bool((self.port() ^ self._reference) & self.latch)

    # I2C

    def write(self, data: bytes) -> None:
        if not data:
            return  # address only: no data byte, no acknowledge of one
        size = self.ports // 8
        if len(data) % size:
            raise ModelError(
                f"{type(self).__name__}: write of {len(data)} data bytes; "
                f"a transmission is pairs of bytes (P07..P00, then P17..P10)"
            )
        with self._lock:
            for i in range(0, len(data), size):
                value = int.from_bytes(data[i : i + size], "little")
                self.latch = value
                self.writes.append(value)
                self._reference = self.port()  # reset at the byte's acknowledge
            self.update_int()

    def read(self, length: int) -> bytes:
        size = self.ports // 8
        out = bytearray()
        with self._lock:
            while len(out) < length:
                sample = self.port()
                self._reference = sample  # reset at the read's acknowledge
                out += sample.to_bytes(size, "little")
            self.reads += length
            self.update_int()
        return bytes(out[:length])

    # For tests

    def last_write(self) -> int:
        """The last port value the driver wrote (AssertionError if none)."""
        if not self.writes:
            raise AssertionError(f"{type(self).__name__}: the driver never wrote the port")
        return self.writes[-1]


class PCF8574(PCF857x):
    """PCF8574 / PCF8574A: 8 pins P7..P0, one byte per port value."""

    ports = 8
    pins = Input[int](bits=8)


class PCF8575(PCF857x):
    """PCF8575: 16 pins P17..P10, P07..P00; a port value is two bytes, P0x first."""

    ports = 16
    pins = Input[int](bits=16)
