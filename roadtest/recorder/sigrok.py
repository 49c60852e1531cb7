"""`roadtest import sigrok`: a logic analyzer's capture of an I2C bus, as a golden trace.

sigrok's own I2C protocol decoder (`sigrok-cli -P i2c`, libsigrokdecode) does the bit-level
work; roadtest reads the two lines from the capture, filters them as a device's input does,
and groups the decoder's bytes into transfers. In steps:

1. The lines' edges. A value change dump is read as it is (pyvcd's reader: its changes, at
   the dump's own resolution); any other capture sigrok-cli reads (a session file `.sr`,
   `-I csv`, ...) is first converted by `sigrok-cli -O vcd`, at its sample rate. The
   channels are named by `--channels scl=NAME,sda=NAME` (default: the capture's channels
   named SCL and SDA, else D0 and D1); a level `z` is high (the bus's pull-up), `x` an error.
2. The spike filter: a pulse narrower than `--spike-filter` ns (default 50, UM10204's tSP,
   the spikes a Fast-mode device's input filter suppresses) is removed from its line, as a
   device never sees it. A glitch that a capture's sampling made wider than that is not.
3. The decoder. The filtered edges, one sample for each instant at which a line changes
   (a long idle bus takes no samples, and the decoder sees the edges in their order,
   with those at one instant together), go to `sigrok-cli -I binary -P i2c`, whose
   annotations (START, repeated START, STOP, address read/write, data, ACK, NACK) map
   back to the capture's time.
4. The grouping. A START ... STOP is one transfer; each (repeated) START begins a message
   of it, whose address byte says the device and the direction (a 10-bit address: 11110,
   its top bits and R/W, then its low byte; a read repeats the first byte with R/W 1 after
   a repeated START, UM10204 3.1.11). A message whose address was NACKed, or one of whose
   written bytes was NACKed, failed (status ERR; a write keeps the bytes the wire carried,
   a read has none). Each transfer becomes one `i2c` event per device it addressed, of
   its messages to that device (FAIL_NEXT on all but the last), at the START's time.

A capture that cannot be decoded cleanly is one error and nothing is written: a channel
it does not have, a line that never goes high, a bus that never idles (activity and no
STOP), a glitch that reached the decoder (a byte whose clocks do not add up to 8 bits and
an acknowledge between two conditions, a START or STOP inside a byte), a read that goes
on after the master's NACK, a warning of the decoder's. A transfer cut off by the
capture's start or end is left out, and counted.
"""

from __future__ import annotations

import argparse
import io
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from vcd.reader import TokenKind, VCDParseError, tokenize

from roadtest.errors import RoadtestError
from roadtest.text import count, printable
from roadtest.trace.format import Header, write_trace_atomic
from roadtest.trace.i2c import VIRTIO_I2C_FLAGS_FAIL_NEXT, VIRTIO_I2C_FLAGS_M_RD
from roadtest.trace.names import chip_name, trace_name

SPIKE_NS: Final = 50  # UM10204 Table 10, tSP: spikes the input filter suppresses
_UNIT_FS: Final = {"s": 10**15, "ms": 10**12, "us": 10**9, "ns": 10**6, "ps": 10**3, "fs": 1}


class SigrokError(RoadtestError):
    pass


# 1. The lines' edges


@dataclass
class Lines:
    """The two lines of a capture: their first levels, and every change after (ns, line, level),
    in time order; line 0 is SCL, 1 is SDA."""

    initial: list[int]
    changes: list[tuple[int, int, int]]


def _sigrok() -> str:
    path = shutil.which("sigrok-cli")
    if path is None:
        raise SigrokError(
            "sigrok-cli is not installed (apt-get install sigrok-cli; `make setup` does): "
            "its I2C decoder reads the capture"
        )
    return path


def _first_line(text: str) -> str:
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("sr: input/vcd: Skipping"):
            return printable(line, 300)
    return ""


def _run(args: Sequence[str], what: str) -> str:
    """sigrok-cli with `args`; its standard output, or SigrokError with its first line."""
    result = subprocess.run(
        [_sigrok(), *args],
        capture_output=True,
        text=True,
        errors="replace",
        stdin=subprocess.DEVNULL,
        check=False,
    )
    message = _first_line(result.stderr)
    if result.returncode != 0:
        raise SigrokError(f"{what}: sigrok-cli failed: {message or 'no message'}")
    # sigrok-cli says some errors only on stderr, with status 0 (a decoder's channel not found).
    if message.startswith(("cli:", "srd:", "Error")):
        raise SigrokError(f"{what}: sigrok-cli: {message}")
    return result.stdout


def _dump_bytes(capture: Path, input_format: str | None) -> bytes:
    """The capture as a value change dump: itself if it is one, else sigrok-cli's conversion."""
    is_vcd = input_format == "vcd" or (input_format is None and capture.suffix.lower() == ".vcd")
    if is_vcd:
        try:
            return capture.read_bytes()
        except FileNotFoundError:
            raise SigrokError(f"{capture}: no such file") from None
        except OSError as err:
            raise SigrokError(f"{capture}: cannot read: {err.strerror or err}") from None
    if not capture.is_file():
        raise SigrokError(
            f"{capture}: no such file" if not capture.exists() else f"{capture}: not a file"
        )
    with tempfile.TemporaryDirectory(prefix="roadtest-sigrok-") as tmp:
        out = Path(tmp) / "capture.vcd"
        fmt = ["-I", input_format] if input_format else []
        _run([*fmt, "-i", str(capture), "-O", "vcd", "-o", str(out)], str(capture))
        if not out.is_file():
            raise SigrokError(f"{capture}: sigrok-cli read no samples from it")
        data = out.read_bytes()
    # libsigrok 0.5's VCD output starts with a "META samplerate" line before the header.
    start = data.find(b"$")
    return data[start:] if start > 0 else data


def read_lines(capture: Path, scl: str | None, sda: str | None, input_format: str | None) -> Lines:
    """SCL's and SDA's edges in the capture; SigrokError for a capture that has not both."""
    data = _dump_bytes(capture, input_format)
    # The definitions through pyvcd's reader; the changes, which may be millions, by a
    # plain split: after $enddefinitions a dump is whitespace-separated tokens.
    end = data.find(b"$enddefinitions")
    body_at = data.find(b"$end", end + len(b"$enddefinitions")) if end >= 0 else -1
    if body_at < 0:
        raise SigrokError(f"{capture}: not a value change dump (it has no $enddefinitions)")
    body_at += len(b"$end")
    names: dict[str, str] = {}  # id code -> channel name
    fs_per_unit = 1
    try:
        for token in tokenize(io.BytesIO(data[:body_at])):
            if token.kind is TokenKind.VAR and token.var.size == 1:
                names[token.var.id_code] = token.var.reference
            elif token.kind is TokenKind.TIMESCALE:
                timescale = token.timescale
                fs_per_unit = int(timescale.magnitude) * _UNIT_FS[str(timescale.unit.value)]
    except VCDParseError as err:
        raise SigrokError(f"{capture}: not a readable value change dump: {err}") from None
    wanted = _choose(names, scl, sda, capture)
    return _changes(data[body_at:], wanted, names, fs_per_unit, capture)


def _changes(
    body: bytes, wanted: dict[str, int], names: dict[str, str], fs_per_unit: int, capture: Path
) -> Lines:
    initial = [-1, -1]  # not given yet
    level = [1, 1]
    changes: list[tuple[int, int, int]] = []
    now = 0
    started = False  # a change at a time after the first
    tokens = iter(body.split())
    for token in tokens:
        head = token[:1]
        if head == b"#":
            try:
                now = int(token[1:])
            except ValueError:
                raise SigrokError(f"{capture}: a bad time stamp {shown(token)}") from None
            started = started or any(v >= 0 for v in initial)
            continue
        if head in _SCALAR:
            line = wanted.get(token[1:].decode(errors="replace"))
            if line is None:
                continue
            value = _LEVELS.get(head)
            at = now * fs_per_unit // 10**6
            if value is None:
                name = names[token[1:].decode()]
                raise SigrokError(f"{capture}: channel {name} is unknown (x) at {at} ns")
            if initial[line] < 0 and not started:
                initial[line] = level[line] = value
            elif value != level[line]:
                level[line] = value
                changes.append((at, line, value))
        elif head in _WITH_ID:
            next(tokens, None)  # a vector's, a real's or a string's value, then its id code
        elif token == b"$comment":
            for word in tokens:
                if word == b"$end":
                    break
    for line in (0, 1):
        if initial[line] < 0:
            initial[line] = 1  # no first value: the pull-up holds it high
    return Lines(initial, changes)


_SCALAR: Final = frozenset({b"0", b"1", b"x", b"X", b"z", b"Z"})
_LEVELS: Final = {b"0": 0, b"1": 1, b"z": 1, b"Z": 1}  # z: an open-drain line's pull-up
_WITH_ID: Final = frozenset({b"b", b"B", b"r", b"R", b"s", b"S"})


def shown(token: bytes) -> str:
    return printable(token[:40].decode(errors="replace"))


def _choose(
    names: dict[str, str], scl: str | None, sda: str | None, capture: Path
) -> dict[str, int]:
    """The id codes of SCL (0) and SDA (1), by the channel names given or by default."""
    by_name = {name: code for code, name in names.items()}
    lowered = {name.lower(): code for name, code in by_name.items()}
    have = ", ".join(sorted(by_name)) or "none"
    chosen: dict[str, int] = {}
    for line, given, defaults in ((0, scl, ("scl", "d0")), (1, sda, ("sda", "d1"))):
        role = "scl" if line == 0 else "sda"
        if given is not None:
            code = by_name.get(given)
            if code is None:
                raise SigrokError(
                    f"{capture}: no channel {printable(given, 60)} for {role.upper()} "
                    f"(its channels: {printable(have, 300)})"
                )
        else:
            code = next((lowered[d] for d in defaults if d in lowered), None)
            if code is None:
                raise SigrokError(
                    f"{capture}: no channel named {role.upper()} or {defaults[1].upper()}: "
                    f"say which it is with --channels scl=NAME,sda=NAME "
                    f"(its channels: {printable(have, 300)})"
                )
        if code in chosen:
            raise SigrokError(f"{capture}: SCL and SDA are both channel {names[code]}")
        chosen[code] = line
    return chosen


# 2. The spike filter


def filter_spikes(lines: Lines, spike_ns: int) -> list[tuple[int, int, int]]:
    """The changes without the pulses narrower than `spike_ns` (each line on its own)."""
    kept: list[list[tuple[int, int, int]]] = [[], []]
    level = list(lines.initial)
    for change in lines.changes:
        when, line, value = change
        mine = kept[line]
        if mine and when - mine[-1][0] < spike_ns:
            mine.pop()  # the level before it lasted less than a spike: it was one
            level[line] = 1 - level[line]
            continue
        if value != level[line]:
            mine.append(change)
            level[line] = value
    merged = sorted(kept[0] + kept[1], key=lambda c: c[0])
    return merged


# 3. The decoder


@dataclass(frozen=True)
class Annotation:
    sample: int
    what: str  # start, restart, stop, ack, nack, address-read, address-write, data-read, ...
    value: int = -1  # a byte's value


def decode(
    initial: Sequence[int], changes: Sequence[tuple[int, int, int]], where: str
) -> tuple[list[Annotation], list[int], list[int]]:
    """sigrok's I2C decoder on the edges: its annotations, each sample's time (ns), and the
    samples at which SCL rose."""
    samples = bytearray()
    times: list[int] = []
    rises: list[int] = []
    scl, sda = initial
    samples.append(scl | sda << 1)
    times.append(changes[0][0] if changes else 0)
    index = 0
    while index < len(changes):
        when = changes[index][0]
        before = scl
        while index < len(changes) and changes[index][0] == when:
            _, line, value = changes[index]
            if line == 0:
                scl = value
            else:
                sda = value
            index += 1
        if scl and not before:
            rises.append(len(samples))
        samples.append(scl | sda << 1)
        times.append(when)
    samples += bytes([scl | sda << 1]) * 2  # the last edge is not the capture's last sample
    times += [times[-1]] * 2
    with tempfile.NamedTemporaryFile(prefix="roadtest-i2c-", suffix=".bin") as file:
        file.write(samples)
        file.flush()
        out = _run(
            [
                "-I",
                "binary:numchannels=2:samplerate=1000000",
                "-i",
                file.name,
                "-P",
                "i2c:scl=0:sda=1",
                "-A",
                "i2c",
                "--protocol-decoder-samplenum",
            ],
            where,
        )
    return list(_annotations(out, where)), times, rises


_TEXTS: Final = {
    "Start": "start",
    "Start repeat": "restart",
    "Stop": "stop",
    "ACK": "ack",
    "NACK": "nack",
}
_BYTES: Final = {
    "Address read": "address-read",
    "Address write": "address-write",
    "Data read": "data-read",
    "Data write": "data-write",
}
_IGNORED: Final = frozenset({"Read", "Write", "0", "1"})  # the R/W bit's and the bits' own


def _annotations(out: str, where: str) -> Iterator[Annotation]:
    """sigrok-cli's lines "SS-ES i2c-1: TEXT", as annotations."""
    for raw in out.splitlines():
        span, _, rest = raw.partition(" ")
        decoder, _, text = rest.partition(": ")
        if not decoder.startswith("i2c"):
            continue
        sample = int(span.split("-", 1)[0])
        if text in _TEXTS:
            yield Annotation(sample, _TEXTS[text])
        elif text in _IGNORED:
            continue
        else:
            name, _, value = text.rpartition(": ")
            if name in _BYTES:
                yield Annotation(sample, _BYTES[name], int(value, 16))
            else:  # a warning of the decoder's (later libsigrokdecode versions have some)
                raise SigrokError(f"{where}: the I2C decoder says {printable(text, 200)!r}")


# 4. The grouping


@dataclass
class _Message:
    addr: int
    read: bool
    data: bytearray = field(default_factory=bytearray)
    failed: bool = False
    ended: bool = False  # a master receiver NACKed: the read is over


@dataclass
class Capture:
    """The transfers of a capture by device address (as trace events), and what was left out."""

    events: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    incomplete: int = 0
    transfers: int = 0


def group(
    annotations: Sequence[Annotation], times: Sequence[int], rises: Sequence[int], where: str
) -> Capture:
    """The decoder's annotations as transfers; SigrokError where the decoding is not clean."""
    capture = Capture()

    def at_ns(sample: int) -> int:
        return times[min(sample, len(times) - 1)]

    def unclean(sample: int, what: str) -> SigrokError:
        return SigrokError(f"{where}: at {at_ns(sample) / 1e6:.6f} ms: {what}")

    start: int | None = None  # sample of the transfer's START
    msgs: list[_Message] = []
    pending_addr: int | None = None  # the first byte of a 10-bit address, written
    last_10bit: int | None = None
    segment_bytes = 0
    segment_start = 0
    rise_index = 0

    def close_segment(sample: int) -> None:
        """The clocks since the last condition are 9 per byte (8 bits and an acknowledge),
        and the one that a repeated START or a STOP needs SCL high for (UM10204 3.1.4)."""
        nonlocal rise_index, segment_bytes
        clocks = 0
        while rise_index < len(rises) and rises[rise_index] <= sample:
            if rises[rise_index] > segment_start:
                clocks += 1
            rise_index += 1
        if start is not None and clocks != 9 * segment_bytes + 1:
            raise unclean(
                sample,
                f"{count(clocks, 'SCL clock')} where {count(segment_bytes, 'byte')} and the "
                f"condition after them take {9 * segment_bytes + 1}: a glitch on the bus (a "
                "byte broken by a START or STOP, or a clock the spike filter did not remove)",
            )
        segment_bytes = 0

    expect_ack = False
    seen_stop = False
    for note in annotations:
        what = note.what
        if what in ("start", "restart"):
            if what == "start":
                # Clocks before a START: those of a transfer the capture's start cut off, or
                # (after a STOP) clocks outside any transfer, which no device takes.
                stray = 0
                while rise_index < len(rises) and rises[rise_index] < note.sample:
                    stray += rises[rise_index] > segment_start
                    rise_index += 1
                if stray and seen_stop:
                    raise unclean(note.sample, f"{count(stray, 'SCL clock')} outside a transfer")
                capture.incomplete += bool(stray)
                start = note.sample
            else:
                close_segment(note.sample)
            if expect_ack:
                raise unclean(note.sample, "a byte without its acknowledge")
            segment_start = note.sample
            continue
        if start is None:
            continue  # the decoder found no START yet (it reports nothing before one)
        if what == "stop":
            close_segment(note.sample)
            if expect_ack:
                raise unclean(note.sample, "a byte without its acknowledge")
            _finish(capture, msgs, at_ns(start))
            start, msgs, pending_addr = None, [], None
            seen_stop = True
            segment_start = note.sample
            continue
        if what in ("ack", "nack"):
            if not expect_ack:
                raise unclean(note.sample, f"an {what.upper()} without a byte")
            expect_ack = False
            nack = what == "nack"
            msg = msgs[-1] if msgs else None
            if msg is None:  # the first byte of a 10-bit address
                if nack:
                    assert pending_addr is not None
                    msgs.append(_Message(pending_addr, False, failed=True))
                    pending_addr = None
                continue
            if msg.read and msg.data:
                msg.ended = nack  # the master's: ACK for more, NACK for the last
            elif nack:
                msg.failed = True  # the device's: it refused the address or a byte
            continue
        # A byte.
        if expect_ack:
            raise unclean(note.sample, "a byte after a byte, without an acknowledge")
        expect_ack = True
        segment_bytes += 1
        value = note.value
        msg = msgs[-1] if msgs else None
        if what.startswith("address"):
            # sigrok shifts the R/W bit off; put the byte together again.
            byte = value << 1 | (what == "address-read")
            if byte & 0xF8 == 0xF0:  # 11110xx: a 10-bit address
                if byte & 1:  # a read of the 10-bit address written before (3.1.11)
                    if last_10bit is None or last_10bit >> 8 != (byte >> 1) & 3:
                        raise unclean(
                            note.sample, "a 10-bit read with no address written before it"
                        )
                    msgs.append(_Message(last_10bit, True))
                else:
                    pending_addr = (byte >> 1 & 3) << 8
                    msgs.append(_Message(-1, False))  # completed by the next byte
                continue
            msgs.append(_Message(byte >> 1, bool(byte & 1)))
            continue
        if msg is None:  # the decoder's first byte after a START is an address
            raise unclean(note.sample, "data before an address")
        if msg.addr == -1:
            msg.addr = (pending_addr or 0) | value
            last_10bit = msg.addr
            pending_addr = None
            continue
        if msg.ended:
            raise unclean(note.sample, "a read that goes on after the master's NACK")
        msg.data.append(value)
    if start is not None:
        capture.incomplete += 1  # cut off by the end of the capture
    return capture


def _finish(capture: Capture, msgs: list[_Message], t: int) -> None:
    # A 10-bit read written as address then a repeated START: the write of the address
    # alone (no data) is part of addressing it, not a message.
    real: list[_Message] = []
    for index, msg in enumerate(msgs):
        after = msgs[index + 1] if index + 1 < len(msgs) else None
        if (
            msg.addr > 0x7F
            and not msg.read
            and not msg.data
            and not msg.failed
            and after is not None
            and after.read
            and after.addr == msg.addr
        ):
            continue
        real.append(msg)
    if not real:
        return
    capture.transfers += 1
    by_addr: dict[int, list[_Message]] = {}
    for msg in real:
        by_addr.setdefault(msg.addr, []).append(msg)
    for addr, mine in by_addr.items():
        out: list[dict[str, Any]] = []
        for position, msg in enumerate(mine):
            flags = 0 if position == len(mine) - 1 else VIRTIO_I2C_FLAGS_FAIL_NEXT
            data = b"" if msg.read and msg.failed else bytes(msg.data)
            out.append(
                {
                    "flags": flags | (VIRTIO_I2C_FLAGS_M_RD if msg.read else 0),
                    "len": len(data),
                    "data": data,
                    "status": 1 if msg.failed else 0,
                }
            )
        capture.events.setdefault(addr, []).append({"kind": "i2c", "t": t, "msgs": out})


def read_capture(
    capture: Path,
    *,
    scl: str | None = None,
    sda: str | None = None,
    input_format: str | None = None,
    spike_ns: int = SPIKE_NS,
) -> Capture:
    """The I2C transfers of a capture, by device address."""
    lines = read_lines(capture, scl, sda, input_format)
    changes = filter_spikes(lines, spike_ns)
    where = str(capture)
    levels = list(lines.initial)
    high = [levels[0] == 1, levels[1] == 1]
    for _, line, value in changes:
        high[line] |= value == 1
    for line, name in ((0, "SCL"), (1, "SDA")):
        if not high[line]:
            raise SigrokError(f"{where}: {name} is never high: is it the right channel?")
    annotations, times, rises = decode(lines.initial, changes, where)
    if not any(a.what == "stop" for a in annotations) and (rises or annotations):
        raise SigrokError(
            f"{where}: the bus never idles: no STOP in the capture "
            f"({count(len(rises), 'SCL clock')}): are SCL and SDA the right channels?"
        )
    return group(annotations, times, rises, where)


# The command


@dataclass
class ImportResult:
    out: Path
    addr: int
    transfers: int
    incomplete: int


def _channels(text: str | None) -> tuple[str | None, str | None]:
    if text is None:
        return None, None
    given: dict[str, str] = {}
    for part in text.split(","):
        role, sep, name = part.partition("=")
        role = role.strip().lower()
        if not sep or role not in ("scl", "sda") or not name.strip():
            raise SigrokError(f"--channels {text}: expected scl=NAME,sda=NAME")
        given[role] = name.strip()
    return given.get("scl"), given.get("sda")


def output_path(out: Path, compatible: str, test: str) -> Path:
    """Where the trace goes: `out` itself (FILE.rtrace), or a golden directory's
    DIR/<chip>/<test>.rtrace, where record writes and replay finds it."""
    if out.suffix == ".rtrace":
        return out
    return out / chip_name(compatible) / f"{trace_name(test)}.rtrace"


def import_sigrok(
    capture: Path,
    out: Path,
    *,
    compatible: str,
    test: str,
    addr: int | None = None,
    device: str = "",
    channels: str | None = None,
    input_format: str | None = None,
    spike_ns: int = SPIKE_NS,
    model: str = "",
    regbytes: int | None = None,
    byteorder: Literal["little", "big"] | None = None,
) -> ImportResult:
    """Write the transfers of one device in a capture as the golden trace at `out`."""
    from roadtest.recorder.tracecmd import TraceCmdError, register_source

    if addr is not None and not 0 <= addr <= 0x3FF:
        raise SigrokError(f"--addr {addr:#x}: not an I2C address (0..0x3ff)")
    if regbytes is not None and not 0 <= regbytes <= 8:
        raise SigrokError(f"--regbytes {regbytes}: not 0..8")
    if spike_ns < 0:
        raise SigrokError(f"--spike-filter {spike_ns}: not a time in ns")
    try:
        model_regbytes, model_order = register_source(model) if model else (0, "little")
    except TraceCmdError as err:
        raise SigrokError(str(err)) from None
    scl, sda = _channels(channels)
    found = read_capture(capture, scl=scl, sda=sda, input_format=input_format, spike_ns=spike_ns)
    listed = ", ".join(
        f"{a:#04x} ({count(len(e), 'transfer')})" for a, e in sorted(found.events.items())
    )
    if addr is None:
        if len(found.events) != 1:
            raise SigrokError(
                f"{capture}: "
                + (
                    f"devices at {listed}: choose one with --addr"
                    if found.events
                    else "no I2C transfers in the capture"
                )
            )
        addr = next(iter(found.events))
    events = found.events.get(addr)
    if not events:
        raise SigrokError(f"{capture}: no transfers at {addr:#04x} (devices: {listed or 'none'})")
    extra: dict[str, Any] = {"source": "sigrok", "capture": capture.name}
    if device:
        extra["device"] = device
    if model:
        extra["registers"] = model
    header = Header(
        kernel="",
        test=test,
        bus="i2c",
        address=addr,
        compatible=compatible,
        model="",
        regbytes=model_regbytes if regbytes is None else regbytes,
        byteorder=byteorder or model_order,
        extra=extra,
    )
    path = output_path(out, compatible, test)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_trace_atomic(path, header, events)
    except OSError as err:
        raise SigrokError(f"{path}: cannot write: {err.strerror or err}") from None
    return ImportResult(path, addr, len(events), found.incomplete)


def command(args: argparse.Namespace) -> int:
    result = import_sigrok(
        Path(args.capture),
        Path(args.out),
        compatible=args.compatible,
        test=args.test,
        addr=args.addr,
        device=args.device,
        channels=args.channels,
        input_format=args.input_format,
        spike_ns=args.spike_filter,
        model=args.model,
        regbytes=args.regbytes,
        byteorder=args.byteorder,
    )
    skipped = (
        f" (left out {count(result.incomplete, 'transfer')} cut off by the capture's start or end)"
        if result.incomplete
        else ""
    )
    print(
        f"imported {count(result.transfers, 'transfer')} of address {result.addr:#04x} "
        f"into {result.out}{skipped}"
    )
    return 0
