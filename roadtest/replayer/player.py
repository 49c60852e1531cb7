"""The trace player: the transfer handler that answers a device's address from its golden trace.

Each transfer the driver makes must be the trace's next one, message by
message (direction, length, bytes written). On SPI the player answers a chip
select's messages: each must be the trace's next `spi` event, transfer by
transfer (every field of its head: word size, mode, speed, cs_change, lane
counts, delays; which buffers it has, its length, the bytes sent), and gets
the recorded RX and results (a recorded TRANS_ERR included). A match gets the recorded
answers, failures (a recorded NACK) included; a mismatch fails that transfer
(the bus NACKs it, so the driver sees an I/O error), fails the test with a
register-level report, and every later transfer fails too. Transfers the
trace expects but the driver never made fail the test when the device is
detached.

The test's own model, when the trace names one, still sees every message
(its answers are dropped, what it raises is reported as when recording): so
its state, its write log and the interrupts it raises follow the test as they
did when the trace was recorded, and the test's assertions hold. The
interrupts it raises, and the driver's GPIO requests, must come in the
recorded order. Without a model (a trace imported
from real hardware), the player raises the recorded interrupts itself:
those recorded after transfer k right after the driver's transfer k, those
before any transfer when the device is bound.

The player reads the trace as it goes and forgets what is well behind it, so
a long trace costs little memory (bench/bench_replay_memory.py). A trace that
turns out damaged part-way fails its replay there, in one line; the events
before the damage were played (the reader's valid-prefix guarantee).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from roadtest.backend.gpio import GpioLine
from roadtest.backend.i2c_model import ModelHandler
from roadtest.backend.i2c_transfer import BusTarget, I2CMessage, Transfer
from roadtest.backend.spi import spi_xfers
from roadtest.backend.spi_model import SPIModelHandler
from roadtest.backend.spi_transfer import SPIMessage, SPITarget, SPITransfer
from roadtest.errors import RoadtestError
from roadtest.models.base import ChipModel, I2CModel, ModelError, SPIModel
from roadtest.replayer.failures import (
    AfterFailure,
    DamagedTrace,
    ReplayDivergence,
    ReplayFailure,
)
from roadtest.replayer.golden import scan_golden
from roadtest.replayer.results import TraceResult, add_trace
from roadtest.text import count, printable
from roadtest.trace.decode import Decoder
from roadtest.trace.format import Header, TraceError, read_trace
from roadtest.trace.i2c import VIRTIO_I2C_FLAGS_M_RD, VIRTIO_I2C_MSG_OK
from roadtest.trace.names import TracedDevice, chip_name, trace_name
from roadtest.trace.spi import VIRTIO_SPI_TRANS_OK

CONTEXT = 5  # events shown before a divergence
SUMMARY_WIDTH = 400  # characters of one event in a report (a 65536-message transfer is 459 KB)
_KEEP_READ = 1024  # events read ahead of being forgotten at once (amortises the list's shift)
# The events a driver's I/O plays: an I2C transfer, an SPI message.
TRANSFER_KINDS = frozenset({"i2c", "spi"})


class _Events:
    """A trace's events, read as the player walks them and forgotten once well behind it
    (the last CONTEXT are kept for the report), so that a long trace costs no more
    memory than a short one. A trace that cannot be read on ends there: `error` says why.
    """

    def __init__(self, reader: Iterator[dict[str, Any]]) -> None:
        self._reader: Iterator[dict[str, Any]] | None = reader
        self._buf: list[dict[str, Any]] = []  # events _base, _base + 1, ...
        self._base = 0
        self.error: TraceError | None = None
        self.transfers = 0  # I2C and SPI events read so far: all of them once `ended`
        self.gpio: list[tuple[str, str, int]] = []  # the GPIO requests read so far
        self.irqs: list[tuple[str, int]] = []  # the interrupt levels read so far

    @property
    def ended(self) -> bool:
        return self._reader is None

    def get(self, index: int) -> dict[str, Any] | None:
        """Event `index`, or None past the end (or past what could be read)."""
        while index >= self._base + len(self._buf):
            if self._reader is None:
                return None
            try:
                event = next(self._reader)
            except StopIteration:
                self._reader = None
                return None
            except TraceError as err:
                self._reader, self.error = None, err
                return None
            kind = event["kind"]
            if kind in TRANSFER_KINDS:
                self.transfers += 1
            elif kind == "gpio":
                self.gpio.append((event["name"], event["op"], event["value"]))
            elif kind == "irq":
                self.irqs.append((event["name"], event["level"]))
            self._buf.append(event)
        if index < self._base:
            raise IndexError(f"event {index} was already forgotten")
        return self._buf[index - self._base]

    def before(self, index: int) -> list[dict[str, Any]]:
        """Up to CONTEXT events right before `index`, for a report."""
        start = max(self._base, index - CONTEXT)
        return self._buf[start - self._base : index - self._base]

    def forget_before(self, index: int) -> None:
        """Events before `index` (but the last CONTEXT) will not be asked for again."""
        drop = index - CONTEXT - self._base
        if drop >= _KEEP_READ:
            del self._buf[:drop]
            self._base += drop

    def drain(self) -> None:
        """Read the rest, for the totals; only the last CONTEXT events are kept."""
        while self._reader is not None:
            end = self._base + len(self._buf)
            self.get(end)
            self.forget_before(end + 1)


class TracePlayer:
    """A TransferHandler (on SPI, an SPIHandler) answering from one golden trace."""

    name = "TracePlayer"
    # A device-events script in front of it lets failing transfers through whole: the trace
    # answers them as they failed (roadtest.fuzz.scripted).
    answers_from_trace = True

    def __init__(
        self,
        path: Path,
        header: Header,
        events: Iterator[dict[str, Any]],
        shadow: ChipModel | None,
        lines: Mapping[str, GpioLine],
        tolerate_repeats: bool = False,
    ) -> None:
        self.path = path
        self.tolerate_repeats = tolerate_repeats
        self.shown_path = printable(str(path))  # a file name from elsewhere, for messages
        self.header = header
        self.events = _Events(events)
        self.shadow = ModelHandler(shadow) if isinstance(shadow, I2CModel) else None
        self.spi_shadow = SPIModelHandler(shadow) if isinstance(shadow, SPIModel) else None
        self.has_model = shadow is not None
        # Lines by the device's names for them: numbers depend on which tests a run collects.
        self.lines = dict(lines)
        self.line_names = {line.index: name for name, line in lines.items()}
        self.decoder = Decoder(header, limit=SUMMARY_WIDTH)
        self.actual_gpio: list[tuple[str, str, int]] = []
        self.actual_irqs: list[tuple[str, int]] = []
        self.pos = 0  # index into events: the next one not yet played
        self.consumed = 0  # transfers matched
        self.done = 0  # transfers of the trace behind us: matched, or skipped repeats
        self.tolerated = 0  # repeated reads made once more or once less than recorded
        self.tolerated_unmasks = 0  # a line's interrupt unmasked once more or once less
        self._last: dict[str, Any] | None = None  # the last transfer matched
        self._before_last: dict[str, Any] | None = None  # the one matched before it
        self._extra = 0  # transfers made of an unrecorded repeat of the last read exchange
        self.failure: ReplayFailure | None = None  # the report, once the replay failed
        self.summary = ""  # its one line for `roadtest replay`'s summary
        self.unbinding = False  # the test asked for the unbind: the driver's remove() runs
        self._lock = threading.Lock()

    @property
    def transfers(self) -> int:
        """The trace's transfers (all of them once the player has read to its end)."""
        return self.events.transfers

    # Interrupts and the position in the trace

    def _raise_pending(self, until: int | None = None) -> None:
        """Play the events up to the next transfer (or event `until`): re-raise
        interrupts, skip the rest."""
        while until is None or self.pos < until:
            event = self.events.get(self.pos)
            if event is None or (until is None and event["kind"] in TRANSFER_KINDS):
                break
            self.pos += 1
            if event["kind"] == "irq" and not self.has_model:
                line = self.lines.get(event["name"])
                if line is not None:
                    line.set(bool(event["level"]))
        self.events.forget_before(self.pos)

    def bound(self) -> None:
        with self._lock:
            if self.pos == 0 and self.failure is None:
                self._raise_pending()

    def observe_gpio(self, line: GpioLine, op: str, value: int, status: int) -> None:
        name = self.line_names.get(line.index, "")
        if op == "input":
            self.actual_irqs.append((name, value))
        else:
            self.actual_gpio.append((name, op, value))

    # The bus side

    def transfer(self, transfer: Transfer) -> None:
        actual = [
            {
                "flags": m.flags,
                "len": m.length,
                "data": b"" if m.flags & VIRTIO_I2C_FLAGS_M_RD else bytes(m.data),
                "status": VIRTIO_I2C_MSG_OK,
            }
            for m in transfer.messages
        ]
        with self._lock:
            try:
                recorded = self._play({"kind": "i2c", "msgs": actual})["msgs"]
            except ModelError as exc:  # a ReplayFailure, or AfterFailure
                transfer.fault(self.name, exc)
                return
        if self.shadow is not None:
            # The test's model sees the messages that reached it when recording, for their
            # side effects; its answers are dropped, what it raises is reported (as it was).
            reached = []
            for msg, want in zip(transfer.messages, recorded, strict=False):
                if want["status"] != VIRTIO_I2C_MSG_OK:
                    break
                reached.append(I2CMessage(msg.flags, msg.length, msg.data))
            if reached:
                copy = Transfer(transfer.addr, reached)
                self.shadow.transfer(copy)
                for where, err in copy.faults or ():
                    transfer.fault(where, err)
        for msg, want in zip(transfer.messages, recorded, strict=False):
            if want["status"] != VIRTIO_I2C_MSG_OK:
                break
            if msg.flags & VIRTIO_I2C_FLAGS_M_RD:
                msg.data = want["data"]
            msg.status = VIRTIO_I2C_MSG_OK

    def message(self, message: SPIMessage) -> None:
        """An SPI message on the device's chip select (an SPIHandler)."""
        actual = {"kind": "spi", "cs": message.cs, "xfers": spi_xfers(message.transfers, False)}
        with self._lock:
            try:
                recorded = self._play(actual)["xfers"]
            except ModelError as exc:  # a ReplayFailure, or AfterFailure
                message.fault(self.name, exc)
                return
        if self.spi_shadow is not None:
            # As for I2C: the model sees the transfers that reached it, for side effects only.
            reached = []
            for t, want in zip(message.transfers, recorded, strict=False):
                if want["result"] != VIRTIO_SPI_TRANS_OK:
                    break
                reached.append(_question(t))
            if reached:
                copy = SPIMessage(message.cs, reached)
                self.spi_shadow.message(copy)
                for where, err in copy.faults or ():
                    message.fault(where, err)
        for t, want in zip(message.transfers, recorded, strict=False):
            if want["result"] != VIRTIO_SPI_TRANS_OK:
                break
            rx = want["rx"]
            t.rx = rx if rx is not None else bytes(t.length)  # no rx_buf: the driver drops it
            t.result = VIRTIO_SPI_TRANS_OK

    def _play(self, actual: dict[str, Any]) -> dict[str, Any]:
        """Match the driver's transfer (an event's kind and fields, without its answers)
        against the trace and move on; returns the recorded event that answers it.
        ReplayFailure when it does not match."""
        if self.failure is not None:
            raise AfterFailure(f"replay of {self.shown_path} had failed before this transfer")
        self._raise_pending()
        if self._extra:
            return self._repeat_goes_on(actual)
        expected = self.events.get(self.pos)
        if expected is not None and _matches(expected, actual):
            self._advance(expected)
            return expected
        tolerated = self._repeated_read(actual, expected)
        if tolerated is not None:
            return tolerated
        event = {"seq": -1, "t": 0, **actual}
        if expected is None:
            if self.events.error is not None:
                raise self._damaged()
            raise self._diverge(f"{self.decoder.describe(event)}: the trace has no more transfers")
        raise self._diverge(self.decoder.describe_expected_actual(expected, event))

    def _advance(self, matched: dict[str, Any]) -> None:
        self._before_last, self._last = self._last, matched
        self.pos += 1
        self.consumed += 1
        self.done += 1
        self._raise_pending()

    def _unmasks_tolerated(self) -> bool:
        """With `tolerate_repeats`, a GPIO line unmasked once more or once less between the
        same other requests (`unmask_differences`): on a clock that is not simulated the
        driver's interrupt thread runs once more or less before unbind, by the test's
        timing, not the driver's."""
        if not self.tolerate_repeats:
            return False
        differences = unmask_differences(self.events.gpio, self.actual_gpio)
        if differences is None:
            return False
        self.tolerated_unmasks += differences
        return True

    def _last_read(self) -> tuple[dict[str, Any], ...]:
        """The read exchange that `tolerate_repeats` lets the driver make once more or once
        less than recorded: the last transfer matched, if it is a register read
        (`_pure_read`); with the transfer before it when that wrote only a command or a
        register address (at most 2 bytes) and the read reads only (a chip of commands reads
        its result in a transfer of its own, after the conversion time). Empty otherwise."""
        last, before = self._last, self._before_last
        if last is None or not _pure_read(last):
            return ()
        if before is not None and _reads_only(last) and _command_write(before):
            return (before, last)
        return (last,)

    def _repeated_read(
        self, actual: dict[str, Any], expected: dict[str, Any] | None
    ) -> dict[str, Any] | None:
        """The one tolerance, when asked for (`tolerate_repeats`: the guest's clock is not
        simulated): the last read exchange (`_last_read`) may be made once more or once
        less than recorded. The kernel reads on its own from workqueues (the RTC core
        after setting the time, for one), racing the test's own reads of the same
        registers, and a driver that caches a measurement for a while measures again when
        more real time went by (sht3x); which run wins is then not the driver's doing.
        Under simulated time it is: the run repeats event for event. On SPI a read is a
        message of transfers that only read, or write at most one byte (a command or
        register address) and do not read, at least one reading (`_pure_read`)."""
        exchange = self._last_read() if self.tolerate_repeats else ()
        if not exchange:
            return None
        if _matches(exchange[0], actual):  # made once more than recorded
            if len(exchange) == 1:
                self.tolerated += 1
            else:
                self._extra = 1
            return exchange[0]
        if expected is None or not _same(expected, exchange[0]):
            return None
        # Recorded repeats the driver did not make: skip them, if what follows matches.
        pos, copies = self._after_copies(self.pos, exchange)
        while (event := self.events.get(pos)) is not None and event["kind"] not in TRANSFER_KINDS:
            pos += 1
        if copies and event is not None and _matches(event, actual):
            self.tolerated += copies
            self.done += copies * len(exchange)
            self._raise_pending(until=pos)
            self.pos = pos
            self._advance(event)
            return event
        return None

    def _repeat_goes_on(self, actual: dict[str, Any]) -> dict[str, Any]:
        """The next transfer of an unrecorded repeat of the last read exchange: the same
        as the exchange's, or the replay diverges."""
        exchange = self._last_read()
        want = exchange[self._extra]
        if not _matches(want, actual):
            event = {"seq": -1, "t": 0, **actual}
            raise self._diverge(
                "in a repeat of the last read: "
                + self.decoder.describe_expected_actual(want, event)
            )
        self._extra = (self._extra + 1) % len(exchange)
        self.tolerated += self._extra == 0
        return want

    def _after_copies(self, pos: int, exchange: tuple[dict[str, Any], ...]) -> tuple[int, int]:
        """From `pos`, past the whole copies of `exchange` in the trace (events that are no
        transfer may come between): the position after the last copy, and their number."""
        copies = 0
        while True:
            at = pos
            for want in exchange:
                while (event := self.events.get(at)) is not None and (
                    event["kind"] not in TRANSFER_KINDS
                ):
                    at += 1
                if event is None or not _same(event, want):
                    return pos, copies
                at += 1
            pos, copies = at, copies + 1

    def _damaged(self) -> ReplayFailure:
        """The trace cannot be read on (from where the player is): fail it."""
        assert self.events.error is not None
        if self.failure is None:
            self.summary = f"the trace is damaged: {self.events.error.detail}"
            self.failure = DamagedTrace(
                f"the golden trace is damaged: {self.events.error.detail}",
                f"replay of {self.shown_path}: the events before the damage were played "
                "(record the trace again)",
            )
        return self.failure

    def _diverge(self, why: str) -> ReplayFailure:
        index = self.pos
        before = self.events.before(index)
        self.events.drain()  # for the number of transfers
        total = f"{self.transfers}" if self.events.error is None else f"at least {self.transfers}"
        where = f"at event {index} (transfer {self.consumed + 1} of {total})"
        self.summary = f"diverged {where}: {why}"
        lines = [f"replay of {self.shown_path}: the driver diverged {where}"]
        if before:
            lines.append("  events before it:")
            lines += [f"    #{e['seq']} {self.decoder.describe(e)}" for e in before]
        self.failure = ReplayDivergence(why, "\n".join(lines), self.unbinding)
        return self.failure

    def _gpio_request(self, request: tuple[str, str, int]) -> str:
        """A GPIO request by line name, op and value: "irq irq_type LEVEL_LOW"."""
        name, op, value = request
        return f"{name} {op} {self.decoder.gpio_value(op, value)}"

    # The verdict

    def finish(self) -> ReplayFailure | None:
        """The replay's failure, if it failed (now that the device is detached, the
        transfers the driver did not make count too)."""
        with self._lock:
            if self.failure is not None:
                return self.failure
            # The transfers not played: all of the trace's from `pos` on.
            left = 0
            nxt: dict[str, Any] | None = None
            exchange = self._last_read() if self.tolerate_repeats and not self._extra else ()
            repeats_only = bool(exchange)
            while (event := self.events.get(self.pos)) is not None:
                if event["kind"] in TRANSFER_KINDS:
                    repeats_only = repeats_only and _same(event, exchange[left % len(exchange)])
                    left += 1
                    nxt = event if nxt is None else nxt
                self.pos += 1
                self.events.forget_before(self.pos)
            if self.events.error is not None:
                return self._damaged()
            if left and repeats_only and left % len(exchange) == 0:
                self.tolerated += left // len(exchange)
                left = 0
            if self._extra:
                self.summary = (
                    "the driver stopped in the middle of a repeat of its last read, after "
                    f"{self._extra} of its {len(self._last_read())} transfers"
                )
            elif left:
                assert nxt is not None
                self.summary = (
                    f"the driver stopped after transfer {self.done} of "
                    f"{self.transfers}; next expected: #{nxt['seq']} "
                    f"{self.decoder.describe(nxt)}"
                )
            elif self.actual_gpio != self.events.gpio and not self._unmasks_tolerated():
                self.summary = (
                    "the driver's GPIO requests differ from the trace: "
                    + _first_difference(
                        [self._gpio_request(r) for r in self.events.gpio],
                        [self._gpio_request(r) for r in self.actual_gpio],
                    )
                )
            elif self.actual_irqs != self.events.irqs:
                self.summary = (
                    "the interrupt line levels differ from the trace: "
                    + _first_difference(self.events.irqs, self.actual_irqs)
                )
            else:
                return None
            self.failure = ReplayDivergence(self.summary, f"replay of {self.shown_path}")
            return self.failure


def unmask_differences(
    expected: list[tuple[str, str, int]], actual: list[tuple[str, str, int]]
) -> int | None:
    """How many interrupt unmasks (a buffer made available on virtio-gpio's eventq) of a
    line differ, if each line's other requests are the same and, between two of them
    (and after the last), the line was unmasked once more or once less at most; None if
    the requests differ in any other way."""

    def by_line(requests: list[tuple[str, str, int]]) -> dict[str, list[Any]]:
        runs: dict[str, list[Any]] = {}
        for name, op, value in requests:
            run = runs.setdefault(name, [0])
            if op == "unmask":
                run[-1] += 1
            else:
                run += [(op, value), 0]
        return runs

    want, got = by_line(expected), by_line(actual)
    if want.keys() != got.keys():
        return None
    differences = 0
    for name, run in want.items():
        other = got[name]
        if len(run) != len(other) or run[1::2] != other[1::2]:
            return None
        counts = [abs(a - b) for a, b in zip(run[0::2], other[0::2], strict=True)]
        if max(counts) > 1:
            return None
        differences += sum(counts)
    return differences


def _first_difference(expected: list[Any], actual: list[Any]) -> str:
    """Where two lists first differ, in a line of bounded length."""
    index = next(
        (i for i, (e, a) in enumerate(zip(expected, actual, strict=False)) if e != a),
        min(len(expected), len(actual)),
    )
    want = _shown(expected[index]) if index < len(expected) else "no more"
    got = _shown(actual[index]) if index < len(actual) else "no more"
    text = f"at #{index} expected {want}, got {got} ({len(expected)} expected, {len(actual)} made)"
    return printable(text, SUMMARY_WIDTH)


def _shown(item: object) -> str:
    return item if isinstance(item, str) else repr(item)


def _question(t: SPITransfer) -> SPITransfer:
    """A copy of what the driver asked of a transfer, not yet answered."""
    return SPITransfer(
        t.cs,
        t.bits_per_word,
        t.cs_change,
        t.tx_nbits,
        t.rx_nbits,
        t.mode,
        t.freq,
        t.word_delay_ns,
        t.cs_setup_ns,
        t.cs_hold_ns,
        t.cs_inactive_ns,
        t.tx,
        t.rx_wanted,
        t.length,
    )


# What of a recorded SPI transfer is the answer, not the question.
_SPI_ANSWERS = ("rx", "result")


def _matches(recorded: dict[str, Any], actual: dict[str, Any]) -> bool:
    """The driver's transfer (an event without its answers) is the recorded one."""
    if recorded["kind"] != actual["kind"]:
        return False
    if actual["kind"] == "spi":
        return _spi_matches(recorded, actual)
    return _i2c_matches(recorded["msgs"], actual["msgs"])


def _spi_matches(recorded: dict[str, Any], actual: dict[str, Any]) -> bool:
    """The same chip select, and each transfer the same: its head's fields, its length,
    the bytes sent, and whether it reads (an rx_buf)."""
    if recorded["cs"] != actual["cs"] or len(recorded["xfers"]) != len(actual["xfers"]):
        return False
    for want, got in zip(recorded["xfers"], actual["xfers"], strict=True):
        if (want["rx"] is None) != (got["rx"] is None):
            return False
        for key, value in got.items():
            if key not in _SPI_ANSWERS and want.get(key) != value:
                return False
    return True


def _i2c_matches(recorded: list[dict[str, Any]], actual: list[dict[str, Any]]) -> bool:
    """The driver's transfer is the recorded one: direction, length, bytes written.

    Traces recorded before the recorder observed the wire kept a failed transfer only
    up to its failed message, without the skipped ones after it: such a transfer
    matches the driver's when it is a prefix of it that ends in a failure."""
    if len(actual) != len(recorded) and not (
        len(recorded) < len(actual) and recorded and recorded[-1]["status"] != VIRTIO_I2C_MSG_OK
    ):
        return False
    for want, got in zip(recorded, actual, strict=False):
        if (want["flags"] & VIRTIO_I2C_FLAGS_M_RD) != (
            got["flags"] & VIRTIO_I2C_FLAGS_M_RD
        ) or want["len"] != got["len"]:
            return False
        if not got["flags"] & VIRTIO_I2C_FLAGS_M_RD and want["data"] != got["data"]:
            return False
    return True


def _pure_read(event: dict[str, Any]) -> bool:
    """A successful register read: at most a register-pointer write, then reads. On SPI:
    transfers that only read, or only write at most one byte, at least one reading."""
    if event["kind"] == "spi":
        xfers = event["xfers"]
        return any(x["tx"] is None and x["rx"] is not None for x in xfers) and all(
            x["result"] == VIRTIO_SPI_TRANS_OK
            and (
                (x["tx"] is None and x["rx"] is not None)
                or (x["rx"] is None and x["tx"] is not None and len(x["tx"]) <= 1)
            )
            for x in xfers
        )
    msgs = event["msgs"]
    reads = [m for m in msgs if m["flags"] & VIRTIO_I2C_FLAGS_M_RD]
    return (
        bool(reads)
        and all(m["status"] == 0 for m in msgs)
        and all(m["flags"] & VIRTIO_I2C_FLAGS_M_RD or m["len"] <= 1 for m in msgs)
    )


def _reads_only(event: dict[str, Any]) -> bool:
    """An I2C transfer of reads alone (no register-pointer write of its own)."""
    return event["kind"] == "i2c" and all(m["flags"] & VIRTIO_I2C_FLAGS_M_RD for m in event["msgs"])


def _command_write(event: dict[str, Any]) -> bool:
    """A successful I2C transfer that only writes, at most 2 bytes in all: a command (a
    chip of 16-bit commands) or a register address, for the read after it."""
    if event["kind"] != "i2c":
        return False
    msgs = event["msgs"]
    return (
        bool(msgs)
        and all(m["status"] == 0 and not m["flags"] & VIRTIO_I2C_FLAGS_M_RD for m in msgs)
        and sum(m["len"] for m in msgs) <= 2
    )


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    if a["kind"] == b["kind"] == "spi":
        return bool(a["cs"] == b["cs"] and a["xfers"] == b["xfers"])
    return bool(a["kind"] == "i2c" and b["kind"] == "i2c" and a["msgs"] == b["msgs"])


class ReplayError(RoadtestError):
    pass


def _failing(err: TraceError) -> Iterator[dict[str, Any]]:
    raise err
    yield  # a generator: the error comes when the player reads its first event


class ReplayHooks:
    """Session hooks that put a TracePlayer in place of each device that has a golden trace.

    A device's trace is the one of its test and origin; failing that, the test's one
    trace of the device's compatible that names no device (imported without --device).
    Only the headers are read up front; a trace's events are streamed as it is played.
    A damaged trace fails its own replay, not the session.
    """

    def __init__(
        self,
        golden: Path,
        results: Path | None = None,
        tolerate_repeats: bool = False,
        kernel_release: str = "",
    ) -> None:
        self.golden = golden
        self.tolerate_repeats = tolerate_repeats
        self.kernel_release = kernel_release  # the replayed kernel's: it picks among versions
        self.index = scan_golden(golden)
        self._claimed: dict[tuple[str, Path], str] = {}  # (test id, trace) -> the device using it
        self.results = results
        self.players: dict[TracedDevice, TracePlayer] = {}
        self.outcomes: list[TraceResult] = []

    def attached(
        self,
        test_id: str,
        device: TracedDevice,
        model: I2CModel,
        lines: Mapping[str, GpioLine],
    ) -> BusTarget:
        return self._player(test_id, device, model, lines), None

    def attached_spi(
        self,
        test_id: str,
        device: TracedDevice,
        model: SPIModel,
        lines: Mapping[str, GpioLine],
    ) -> SPITarget:
        return self._player(test_id, device, model, lines), None

    def _player(
        self,
        test_id: str,
        device: TracedDevice,
        model: ChipModel,
        lines: Mapping[str, GpioLine],
    ) -> TracePlayer:
        path = self.index.choose(test_id, device.origin, self.kernel_release)
        if path is None:
            path = self._deviceless(test_id, device)
        if path is None:
            unreadable = len(self.index.damaged)
            hint = f"; {count(unreadable, 'trace')} there cannot be read" if unreadable else ""
            raise ReplayError(
                f"no golden trace for {test_id} and {device.origin} under {self.golden} "
                f"(expected something like {chip_name(device.compatible)}/"
                f"{trace_name(test_id)}.rtrace): record it with `roadtest record`{hint}"
            )
        header = self.index.headers[path]
        if header.bus != device.bus:
            raise ReplayError(
                f"the golden trace {path} is of a device on {header.bus}, and "
                f"{device.origin} is on {device.bus}"
            )
        try:
            _, events = read_trace(path)
        except TraceError as err:  # changed since the scan: the player fails at once
            events = _failing(err)
        # A trace without a model (imported from hardware) has only the trace to go by.
        shadow = model if header.model else None
        player = TracePlayer(path, header, events, shadow, lines, self.tolerate_repeats)
        for line in lines.values():
            line.observers.append(player.observe_gpio)
        self.players[device] = player
        return player

    def _deviceless(self, test_id: str, device: TracedDevice) -> Path | None:
        """The test's one trace of this compatible that names no device, if there is one."""
        compatible, origin = device.compatible, device.origin
        paths = self.index.deviceless.get((test_id, compatible), [])
        if len(paths) > 1:
            raise ReplayError(
                f"{len(paths)} golden traces for {test_id} and {compatible} name no device "
                f"({printable(', '.join(map(str, paths)))}): import them with --device ORIGIN"
            )
        if not paths:
            return None
        claimed = self._claimed.setdefault((test_id, paths[0]), origin)
        if claimed != origin:
            raise ReplayError(
                f"{printable(str(paths[0]))} names no device, and {test_id} has two "
                f"{compatible} devices ({claimed}, {origin}): import it with --device ORIGIN"
            )
        return paths[0]

    def marker(self, device: TracedDevice, what: str, detail: Any) -> None:
        player = self.players.get(device)
        if player is not None and what == "bind":
            player.bound()
        elif player is not None and what == "unbind":
            player.unbinding = True

    def detached(self, device: TracedDevice) -> list[Exception]:
        player = self.players.pop(device, None)
        if player is None:
            return []
        for line in player.lines.values():
            if player.observe_gpio in line.observers:
                line.observers.remove(player.observe_gpio)
        failure = player.finish()
        result = TraceResult(
            str(player.path),
            player.header.test,
            player.transfers,
            player.consumed,
            player.summary,
            player.tolerated,
            isinstance(failure, DamagedTrace),
            self.kernel_release,
            player.tolerated_unmasks,
        )
        self.outcomes.append(result)
        if self.results is not None:
            add_trace(self.results, result)
        return [failure] if failure is not None else []
