"""`roadtest trace export --vcd`: a trace as the bus would be on its wires, a value change dump.

An I2C trace becomes SCL and SDA, synthesised per transfer at the bus clock as the I2C-bus
specification (NXP UM10204, Rev. 7, section 3.1 and Table 10) draws them:

- the bus is free (SCL and SDA high) for at least tBUF before a START;
- START: SDA falls while SCL is high, SCL falls tHD;STA later;
- each bit: SDA changes while SCL is low (tHD;DAT after SCL fell, tSU;DAT before it rises),
  SCL high for tHIGH, low for tLOW; a byte is 8 bits MSB first, then the receiver's ACK
  (SDA low) or NACK (SDA high) in a ninth clock;
- an address byte is the 7-bit address and R/W (1 read); a 10-bit address (above 0x7f) is
  11110 and its two top bits, then its low byte, and a read repeats the first byte with
  R/W 1 after a repeated START (section 3.1.11);
- a master receiver ACKs every byte it reads but the last, which it NACKs;
- a repeated START between the messages of one transfer (tSU;STA, then as START);
- STOP: SDA rises while SCL is high, tSU;STO after SCL rose.

The minimum times are UM10204's for the clock's mode (Standard-mode up to 100 kHz, Fast-mode
up to 400 kHz, Fast-mode Plus up to 1 MHz); SCL's low half is stretched to tLOW where half a
period is shorter (400 kHz: 1.3 us low, 1.2 us high), and SDA changes a quarter of tLOW
after SCL fell (at most tVD;DAT).

A failed message shows as it fails on a wire: a read, or a write without data, has its
address NACKed; a write with data has every byte sent and the last NACKed (the trace does
not say which byte a device refused, and so the wire carries all the trace holds). The
master then sends STOP: the messages the trace has after a failed one never reached the
bus, and are not drawn.

An SPI trace becomes SCLK, MOSI, MISO and one chip select (`cs<N>`, active low unless the
transfer's mode has CS_HIGH): each message asserts it, each transfer shifts its words
(bits_per_word each, MSB first unless LSB_FIRST) at its own clock (`freq`, else the
export's), SCLK idling at CPOL; with CPHA 0 data is set before the leading edge and
sampled on it, with CPHA 1 it changes after the leading edge and is sampled on the
trailing one. A transfer with cs_change releases the chip select before the next one.
A line nothing drives (no tx buffer, no rx buffer, or a failed transfer's rx) is `z`.
Dual and quad transfers are drawn on the one data line each way.

Every GPIO line the trace names is a wire of its own, at the level the model drove
(`irq` events, the interrupts) or the driver set (`set_value`); the driver's other line
requests are a string signal `gpio_requests` ("irq:unmask"), and the test's markers one
called `test`.

Times are the trace's: the guest's (simulated) time when the trace has it, else the
host's, from shortly before the first event. A transfer whose time comes before the bus
is free again (the previous one would still be on the wires at this clock) is pushed
later, and every event after it with it, so that the order of events is the trace's.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from vcd import VCDWriter
from vcd.writer import Variable

from roadtest.atomic import replacing
from roadtest.errors import RoadtestError
from roadtest.trace.format import Header, read_trace
from roadtest.trace.i2c import VIRTIO_I2C_FLAGS_M_RD, VIRTIO_I2C_MSG_OK
from roadtest.trace.spi import (
    VIRTIO_SPI_CPHA,
    VIRTIO_SPI_CPOL,
    VIRTIO_SPI_CS_HIGH,
    VIRTIO_SPI_MODE_LSB_FIRST,
    VIRTIO_SPI_TRANS_OK,
    word_bytes,
)

DEFAULT_CLOCK: Final = 100_000  # Hz: Standard-mode I2C, and SPI transfers that name no clock
MAX_I2C_CLOCK: Final = 1_000_000  # Fast-mode Plus; Hs-mode (3.4 MHz) has other signalling
MAX_SPI_CLOCK: Final = 500_000_000  # a half period of 1 ns, the dump's time unit


class ExportError(RoadtestError):
    pass


@dataclass(frozen=True)
class I2CMode:
    """One speed mode's minimum times, in ns (UM10204 Rev. 7, Table 10)."""

    name: str
    top_hz: int
    hd_sta: int  # hold time (repeated) START
    low: int  # LOW period of SCL
    high: int  # HIGH period of SCL
    su_sta: int  # set-up time for a repeated START
    su_dat: int  # data set-up time
    vd_dat: int  # data valid time (SCL low to SDA valid), a maximum
    su_sto: int  # set-up time for STOP
    buf: int  # bus free time between a STOP and a START


I2C_MODES: Final = (
    I2CMode("Standard-mode", 100_000, 4000, 4700, 4000, 4700, 250, 3450, 4000, 4700),
    I2CMode("Fast-mode", 400_000, 600, 1300, 600, 600, 100, 900, 600, 1300),
    I2CMode("Fast-mode Plus", 1_000_000, 260, 500, 260, 260, 50, 450, 260, 500),
)


@dataclass(frozen=True)
class I2CTiming:
    """The times one clock draws its bus with, in ns."""

    mode: I2CMode
    low: int
    high: int
    hold: int  # SDA changes this long after SCL fell
    hd_sta: int
    su_sta: int
    su_sto: int
    buf: int

    @classmethod
    def for_clock(cls, hz: int) -> I2CTiming:
        if not 1 <= hz <= MAX_I2C_CLOCK:
            raise ExportError(
                f"--clock {hz}: an I2C clock is 1 Hz..1 MHz (UM10204's modes up to Fast-mode "
                "Plus; Hs-mode is not drawn)"
            )
        mode = next(m for m in I2C_MODES if hz <= m.top_hz)
        period = round(1e9 / hz)
        low = max(mode.low, period // 2)
        high = period - low
        # At the top of each mode a period has room for both minimums (Standard-mode:
        # 4.7 + 4.0 us of 10 us, Fast-mode: 1.3 + 0.6 of 2.5, Fast-mode Plus: 0.5 + 0.26 of 1).
        assert high >= mode.high, (hz, high)
        hold = min(low // 4, mode.vd_dat)
        assert low - hold >= mode.su_dat
        return cls(
            mode=mode,
            low=low,
            high=high,
            hold=hold,
            hd_sta=max(mode.hd_sta, high),
            su_sta=max(mode.su_sta, high),
            su_sto=max(mode.su_sto, high),
            buf=max(mode.buf, low),
        )


Change = tuple[int, int, int | str]  # (time in ns, signal number, value)


class _Signals:
    """The dump's signals and their changes, collected before they are written in time order."""

    def __init__(self) -> None:
        self.names: list[tuple[str, str, str, int | str]] = []  # (scope, name, type, initial)
        self.changes: list[Change] = []
        self.levels: list[int | str] = []

    def add(self, scope: str, name: str, kind: str, initial: int | str) -> int:
        self.names.append((scope, name, kind, initial))
        self.levels.append(initial)
        return len(self.names) - 1

    def set(self, signal: int, when: int, value: int | str) -> None:
        if self.levels[signal] != value:
            self.levels[signal] = value
            self.changes.append((when, signal, value))

    def write(self, file: Any, header: Header, end: int) -> None:
        with VCDWriter(
            file,
            timescale="1 ns",
            date="",
            version="roadtest trace export",
            comment=f"{header.test} {header.compatible}",
            check_values=False,  # values drawn here: 0, 1, z, x and tokens without spaces
        ) as writer:
            variables: list[Variable[Any]] = []
            for scope, name, kind, initial in self.names:
                size = None if kind == "string" else 1
                variables.append(writer.register_var(scope, name, kind, size=size, init=initial))
            # A signal's changes are in its own time order; sorted() keeps that order
            # for changes at one instant (a marker and a GPIO request at once).
            latest: dict[int, int] = {}
            for when, signal, value in sorted(self.changes, key=lambda c: c[0]):
                if latest.get(signal) == when:
                    raise AssertionError(f"two changes of {self.names[signal][1]} at {when} ns")
                latest[signal] = when
                writer.change(variables[signal], when, value)
            # A last time stamp after every change: readers (sigrok's) end the capture there.
            writer.change(variables[0], end, self.levels[0])
            writer.flush(end)


class _I2CBus:
    """SCL and SDA, drawn bit by bit from `t`, the time SCL last fell (or the bus went free)."""

    def __init__(self, signals: _Signals, timing: I2CTiming) -> None:
        self.s = signals
        self.timing = timing
        self.scl = signals.add("i2c", "scl", "wire", 1)
        self.sda = signals.add("i2c", "sda", "wire", 1)
        self.t = 0
        self.free = 0  # when the next START may come (tBUF after a STOP)

    def start(self, when: int) -> None:
        t = self.timing
        when = max(when, self.free)
        self.s.set(self.sda, when, 0)
        self.t = when + t.hd_sta
        self.s.set(self.scl, self.t, 0)

    def restart(self) -> None:
        t = self.timing
        self.s.set(self.sda, self.t + t.hold, 1)
        rise = self.t + t.low
        self.s.set(self.scl, rise, 1)
        self.s.set(self.sda, rise + t.su_sta, 0)
        self.t = rise + t.su_sta + t.hd_sta
        self.s.set(self.scl, self.t, 0)

    def stop(self) -> None:
        t = self.timing
        self.s.set(self.sda, self.t + t.hold, 0)
        rise = self.t + t.low
        self.s.set(self.scl, rise, 1)
        self.t = rise + t.su_sto
        self.s.set(self.sda, self.t, 1)
        self.free = self.t + t.buf

    def bit(self, value: int) -> None:
        t = self.timing
        self.s.set(self.sda, self.t + t.hold, value)
        self.s.set(self.scl, self.t + t.low, 1)
        self.t += t.low + t.high
        self.s.set(self.scl, self.t, 0)

    def byte(self, value: int, ack: bool) -> None:
        for shift in range(7, -1, -1):
            self.bit((value >> shift) & 1)
        self.bit(0 if ack else 1)

    def address(self, addr: int, read: bool, ack: bool) -> None:
        """The address of a message after its (repeated) START; `ack`: the device's answer
        (on a 10-bit address, to the last byte of it; the bytes before are ACKed)."""
        if addr <= 0x7F:
            self.byte(addr << 1 | read, ack)
            return
        first = 0xF0 | (addr >> 8) << 1
        if not read:
            self.byte(first, True)
            self.byte(addr & 0xFF, ack)
            return
        self.byte(first, True)
        self.byte(addr & 0xFF, True)
        self.restart()
        self.byte(first | 1, ack)

    def transfer(self, when: int, addr: int, msgs: Sequence[Mapping[str, Any]]) -> None:
        self.start(when)
        for index, msg in enumerate(msgs):
            if index:
                self.restart()
            read = bool(msg["flags"] & VIRTIO_I2C_FLAGS_M_RD)
            data: bytes = msg["data"]
            failed = msg["status"] != VIRTIO_I2C_MSG_OK
            if failed and (read or not data):
                self.address(addr, read, ack=False)
                break
            self.address(addr, read, ack=True)
            for at, value in enumerate(data):
                last = at == len(data) - 1
                # A master receiver NACKs the last byte it reads; a writer's bytes are ACKed
                # by the device, but for the last of a failed write.
                self.byte(value, ack=not last if read else not (failed and last))
            if failed:
                break
        self.stop()


class _SPIBus:
    """SCLK, MOSI, MISO and the chip select of one device."""

    def __init__(self, signals: _Signals, cs: int, clock: int, first_mode: int) -> None:
        self.s = signals
        self.clock = clock
        self.cpol = 1 if first_mode & VIRTIO_SPI_CPOL else 0
        self.cs_high = bool(first_mode & VIRTIO_SPI_CS_HIGH)
        self.sclk = signals.add("spi", "sclk", "wire", self.cpol)
        self.mosi = signals.add("spi", "mosi", "wire", "z")
        self.miso = signals.add("spi", "miso", "wire", "z")
        self.cs = signals.add("spi", f"cs{cs}", "wire", 0 if self.cs_high else 1)
        self.t = 0
        self.free = 0

    def _half(self, freq: int) -> int:
        hz = freq or self.clock
        if hz > MAX_SPI_CLOCK:
            raise ExportError(f"an SPI transfer at {hz} Hz: the dump's 1 ns cannot draw it")
        return max(1, round(1e9 / hz / 2))

    def message(self, when: int, xfers: Sequence[Mapping[str, Any]]) -> None:
        self.t = max(when, self.free)
        selected = False
        for xfer in xfers:
            mode: int = xfer["mode"]
            cpol = 1 if mode & VIRTIO_SPI_CPOL else 0
            cpha = bool(mode & VIRTIO_SPI_CPHA)
            half = self._half(xfer["freq"])
            if not selected:
                self.s.set(self.sclk, self.t, cpol)  # the clock idles before the select
                self.t += 1
                self.cs_high = bool(mode & VIRTIO_SPI_CS_HIGH)
                self.s.set(self.cs, self.t, 1 if self.cs_high else 0)
                self.t += max(xfer["cs_setup_ns"], half)
                selected = True
            self._words(xfer, cpol, cpha, half)
            if xfer["cs_change"] and xfer is not xfers[-1]:
                self.t += max(xfer["cs_delay_hold_ns"], half)
                self.s.set(self.cs, self.t, 0 if self.cs_high else 1)
                self.t += max(xfer["cs_change_delay_inactive_ns"], 2 * half)
                selected = False
        last = xfers[-1]
        self.t += max(last["cs_delay_hold_ns"], self._half(last["freq"]))
        self.s.set(self.cs, self.t, 0 if self.cs_high else 1)
        self.s.set(self.mosi, self.t, "z")
        self.s.set(self.miso, self.t, "z")
        self.free = self.t + max(last["cs_change_delay_inactive_ns"], 2 * self._half(last["freq"]))

    def _words(self, xfer: Mapping[str, Any], cpol: int, cpha: bool, half: int) -> None:
        bits: int = xfer["bits_per_word"]
        size = word_bytes(bits)
        lsb_first = bool(xfer["mode"] & VIRTIO_SPI_MODE_LSB_FIRST)
        tx: bytes | None = xfer["tx"]
        rx: bytes | None = xfer["rx"]
        if xfer["result"] != VIRTIO_SPI_TRANS_OK:
            rx = None  # what the device shifted out never reached the driver
        order = range(bits) if lsb_first else range(bits - 1, -1, -1)
        for at in range(0, xfer["len"], size):
            if at:
                self.t += xfer["word_delay_ns"]
            out = _word(tx, at, size, bits)
            back = _word(rx, at, size, bits)
            for shift in order:
                # CPHA 0: data is set half a clock before the leading edge, which samples it;
                # CPHA 1: it changes just after the leading edge, the trailing one samples it.
                data_at = self.t if not cpha else self.t + half + max(1, half // 4)
                self.s.set(self.mosi, data_at, "z" if out is None else (out >> shift) & 1)
                self.s.set(self.miso, data_at, "z" if back is None else (back >> shift) & 1)
                self.s.set(self.sclk, self.t + half, 1 - cpol)
                self.t += 2 * half
                self.s.set(self.sclk, self.t, cpol)
            if cpha:
                self.t += max(1, half // 2)  # the last bit stays valid past the sampling edge


def _word(data: bytes | None, at: int, size: int, bits: int) -> int | None:
    if data is None:
        return None
    return int.from_bytes(data[at : at + size], "big") & ((1 << bits) - 1)


def _line_name(event: Mapping[str, Any]) -> str:
    name = str(event.get("name") or f"line{event['line']}")
    return "".join(c if c.isalnum() or c in "_-" else "_" for c in name)


def _token(text: str) -> str:
    """A string signal's value: VCD's strings have no spaces."""
    return "".join(c if c.isprintable() and not c.isspace() else "_" for c in text) or "_"


def export_vcd(trace: str | os.PathLike[str], out: Path, clock: int = DEFAULT_CLOCK) -> int:
    """Write the dump of the trace `trace` to `out` (whole or not at all); its events' count."""
    header, events = read_trace(trace)
    listed = list(events)
    signals = _Signals()
    if header.bus == "i2c":
        i2c: _I2CBus | None = _I2CBus(signals, I2CTiming.for_clock(clock))
        spi: _SPIBus | None = None
    elif header.bus == "spi":
        i2c = None
        first = next((e for e in listed if e["kind"] == "spi"), None)
        mode = first["xfers"][0]["mode"] if first is not None else 0
        spi = _SPIBus(signals, header.address, clock, mode)
        if not 1 <= clock <= MAX_SPI_CLOCK:
            raise ExportError(f"--clock {clock}: an SPI clock is 1 Hz..500 MHz")
    else:
        raise ExportError(f"{trace}: a trace of the {header.bus!r} bus: only i2c and spi are drawn")
    # The wires first, the strings last: a reader that knows no strings (sigrok's, PulseView's)
    # skips their changes, and their short id codes then never look like a wire's value.
    lines: dict[str, int] = {}
    for event in listed:
        if event["kind"] in ("irq", "gpio") and _line_name(event) not in lines:
            lines[_line_name(event)] = signals.add("gpio", _line_name(event), "wire", "x")
    requests = signals.add("gpio", "gpio_requests", "string", "_")
    markers = signals.add("test", "test", "string", "_")
    lead = (i2c.timing.buf if i2c is not None else 0) + 1000
    clock_key = "sim" if listed and "sim" in listed[0] else "t"
    origin = listed[0][clock_key] if listed else 0
    cursor = 0  # nothing is drawn before the end of what came before it
    for event in listed:
        when = event.get(clock_key)
        at = max(cursor, lead + when - origin if isinstance(when, int) else cursor)
        kind = event["kind"]
        if kind == "i2c" and i2c is not None:
            i2c.transfer(at, header.address, event["msgs"])
            cursor = i2c.free
        elif kind == "spi" and spi is not None:
            spi.message(at, event["xfers"])
            cursor = spi.free
        elif kind in ("irq", "gpio"):
            name = _line_name(event)
            if kind == "irq":
                signals.set(lines[name], at, event["level"] & 1)
            elif event["op"] == "set_value" and event["status"] == 0:
                signals.set(lines[name], at, event["value"] & 1)
            else:
                text = _token(f"{name}:{event['op']}={event['value']}")
                signals.levels[requests] = ""  # the same request twice still shows
                signals.set(requests, at, text)
            cursor = at + 1
        elif kind == "marker":
            signals.levels[markers] = ""
            signals.set(markers, at, _token(str(event["what"])))
            cursor = at + 1
    end = max([cursor, *(c[0] for c in signals.changes)]) + lead
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with replacing(out) as tmp, tmp.open("w", encoding="ascii") as file:
            signals.write(file, header, end)
    except OSError as err:
        raise ExportError(f"{out}: cannot write: {err.strerror or err}") from None
    return len(listed)


def export_command(vcd: str, trace: str, clock: int) -> int:
    count = export_vcd(trace, Path(vcd), clock)
    print(f"wrote {vcd}: {count} events of {trace}")
    return 0
