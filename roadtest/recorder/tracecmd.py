"""`roadtest import trace-cmd`: the kernel's i2c trace events, as a golden trace.

A board that does not run roadtest's backend can still record what its driver
did on the bus: `trace-cmd record -e i2c` captures the i2c_write, i2c_read,
i2c_reply and i2c_result events of `__i2c_transfer()` (include/trace/events/i2c.h):

    i2c_write   "i2c-%d #%u a=%03x f=%04x l=%u [%*phD]"   a message to write
    i2c_read    "i2c-%d #%u a=%03x f=%04x l=%u"           a message to read
    i2c_reply   "i2c-%d #%u a=%03x f=%04x l=%u [%*phD]"   what a read got
    i2c_result  "i2c-%d n=%u ret=%d"                      the transfer's outcome

One `__i2c_transfer()` call traces its messages (#0, #1, ...), then, once the
adapter is done, a reply for each read message among the first `ret` ones,
then the result. The bus lock keeps one adapter's transfers apart; those of
different adapters may interleave. Each transfer with messages at the given
address becomes one `i2c` event, as the live recorder writes it: the
messages at that address, Linux's I2C_M_RD as M_RD, FAIL_NEXT on all but the
last. `ret` is the number of messages the adapter carried out (or a negative
errno): messages before it are OK (status 0), the rest failed (status 1, and
a failed read has no data). The event's `t` is the transfer's first
timestamp, in ns.

The input is a trace.dat (read with `trace-cmd report`) or a saved
`trace-cmd report` text, told apart by content. Lines of other events are
skipped; a malformed i2c line is an error naming its line. A transfer cut off
by the start or the end of the capture is left out (and counted).
"""

from __future__ import annotations

import argparse
import importlib
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from roadtest.errors import RoadtestError
from roadtest.text import count
from roadtest.trace.format import Header, write_trace_atomic
from roadtest.trace.i2c import VIRTIO_I2C_FLAGS_FAIL_NEXT, VIRTIO_I2C_FLAGS_M_RD

DAT_MAGIC: Final = b"\x17\x08\x44tracing"
LINUX_I2C_M_RD: Final = 0x0001
EVENTS: Final = ("i2c_write", "i2c_read", "i2c_reply", "i2c_result")
MAX_NS: Final = 2**64 - 1  # the largest integer msgpack holds: an event's "t" must fit

# "  <comm>-<pid>  [cpu]  <secs>.<frac>: <event>:  <fields>", as trace-cmd report prints
# it (and the kernel's own trace file, with its latency flags before the timestamp).
_EVENT_LINE: Final = re.compile(
    r"^\s*(?P<task>.*?)-(?P<pid>\d+)\s+(?:\(\s*[\d-]+\)\s+)?\[(?P<cpu>\d+)\]\s+"
    r"(?:\S{4,6}\s+)?(?P<secs>\d+)\.(?P<frac>\d{1,9}):\s+(?P<event>[\w:]+):\s?(?P<body>.*)$"
)
_MENTIONS_I2C: Final = re.compile(r"\bi2c_(?:write|read|reply|result):")
_MSG: Final = re.compile(
    r"^i2c-(?P<adapter>\d+) #(?P<index>\d+) a=(?P<addr>[0-9a-f]+) f=(?P<flags>[0-9a-f]+) "
    r"l=(?P<len>\d+)(?P<bracket> \[(?P<data>[0-9a-f]{2}(?:-[0-9a-f]{2})*)?\])?$"
)
_RESULT: Final = re.compile(r"^i2c-(?P<adapter>\d+) n=(?P<n>\d+) ret=(?P<ret>-?\d+)$")
_SMBUS: Final = re.compile(r"^i2c-(?P<adapter>\d+) a=(?P<addr>[0-9a-f]+) ")
_LOST: Final = re.compile(r"^\s*CPU:\s*\d+\s+\[.*\b(?:LOST|DROPPED)\b.*\]\s*$")
_UNAME: Final = re.compile(r"^Linux \S+ (?P<release>\S+) \S+$")
_REPORT_HEADER: Final = re.compile(r"^(?:cpus=\d+|version = \d+|CPU \d+ is empty)$")


class TraceCmdError(RoadtestError):
    pass


class _NoEvents(TraceCmdError):
    """The input has no event lines and no report header: it is not a report."""


@dataclass
class _Msg:
    index: int
    addr: int
    flags: int  # Linux's i2c_msg flags
    length: int
    data: bytes  # a write's bytes; b"" for a read
    line: int


@dataclass
class _Transfer:
    adapter: int
    t: int
    line: int
    msgs: list[_Msg] = field(default_factory=list)
    replies: dict[int, bytes] = field(default_factory=dict)


@dataclass
class Capture:
    """What a report holds for one address: its transfers, as trace events, by adapter."""

    source: str
    addr: int
    kernel: str = ""  # the traced kernel's release, when the input names it
    events: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    seen: set[tuple[int, int]] = field(default_factory=set)  # (adapter, address) with traffic
    smbus: int = 0  # smbus_* events at the address (adapters with their own SMBus)
    incomplete: int = 0  # transfers cut off by the start or the end of the capture

    def transfers(self, adapter: int | None) -> tuple[int, list[dict[str, Any]]]:
        """The adapter (given, or the only one with traffic at the address) and its events."""
        where = f"address {self.addr:#04x} in {self.source}"
        if adapter is None:
            adapters = sorted(self.events)
            if len(adapters) > 1:
                listed = ", ".join(f"i2c-{a}" for a in adapters)
                raise TraceCmdError(
                    f"i2c events for {where} on several adapters ({listed}): "
                    "choose one with --adapter N"
                )
            if adapters:
                return adapters[0], self.events[adapters[0]]
            raise TraceCmdError(f"no i2c events for {where}{self._hint()}")
        events = self.events.get(adapter)
        if not events:
            raise TraceCmdError(f"no i2c events for adapter {adapter} {where}{self._hint()}")
        return adapter, events

    def _hint(self) -> str:
        if self.smbus:
            return (
                f" ({count(self.smbus, 'smbus event')} there: the adapter does SMBus itself, and "
                "only i2c transfers can be imported)"
            )
        if self.seen:
            shown = ", ".join(f"i2c-{a} {addr:#04x}" for a, addr in sorted(self.seen))
            return f" (traffic seen at: {shown})"
        return " (it has no i2c transfers at all: was it recorded with `-e i2c`?)"


def _ns(secs: str, frac: str) -> int:
    return int(secs) * 1_000_000_000 + int(frac.ljust(9, "0"))


def parse_report(lines: Iterable[str], addr: int, source: str) -> Capture:
    """The transfers at `addr` in the lines of a `trace-cmd report`; TraceCmdError on bad input."""
    capture = Capture(source=source, addr=addr)
    open_transfers: dict[int, _Transfer] = {}
    started: set[int] = set()  # adapters whose first transfer start has been seen
    event_lines = 0
    report_header = False

    def error(number: int, what: str) -> TraceCmdError:
        return TraceCmdError(f"{source}: line {number}: {what}")

    for number, raw in enumerate(lines, 1):
        line = raw.rstrip("\r\n")
        match = _EVENT_LINE.match(line)
        if match is None:
            if _LOST.match(line):
                raise error(
                    number,
                    f"the capture lost events ({line.strip()}), so its transfers are "
                    "incomplete: capture again with a bigger buffer (trace-cmd record -b KB)",
                )
            if _MENTIONS_I2C.search(line):
                raise error(number, f"malformed i2c event line: {line.strip()!r}")
            if not event_lines:
                if _REPORT_HEADER.match(line.strip()):
                    report_header = True
                uname = _UNAME.match(line.strip())
                if uname:
                    capture.kernel = uname["release"]
            continue
        event_lines += 1
        event = match["event"].rsplit(":", 1)[-1]
        body = match["body"].strip()
        if event.startswith("smbus_"):
            smbus = _SMBUS.match(body)
            if smbus and int(smbus["addr"], 16) == addr:
                capture.smbus += 1
            continue
        if event not in EVENTS:
            continue
        t = _ns(match["secs"], match["frac"])
        if t > MAX_NS:
            raise error(
                number,
                f"timestamp {match['secs']}.{match['frac']} s is more than a trace holds "
                "(2^64 ns, 584 years): a damaged line?",
            )
        if event == "i2c_result":
            result = _RESULT.match(body)
            if result is None:
                raise error(number, f"malformed i2c_result: {body!r} (expected 'i2c-N n=N ret=N')")
            adapter = int(result["adapter"])
            transfer = open_transfers.pop(adapter, None)
            if transfer is None:
                if adapter in started:
                    raise error(number, f"i2c_result on i2c-{adapter} outside a transfer")
                capture.incomplete += 1  # the capture began inside this transfer
                continue
            _finish(capture, transfer, int(result["n"]), int(result["ret"]), number, error)
            continue
        msg = _MSG.match(body)
        if msg is None:
            raise error(
                number, f"malformed {event}: {body!r} (expected 'i2c-N #N a=ADDR f=FLAGS l=LEN')"
            )
        has_data = msg["bracket"] is not None
        if has_data != (event != "i2c_read"):
            raise error(
                number,
                f"malformed {event}: {body!r} "
                + ("has data bytes" if has_data else "has no [data bytes]"),
            )
        adapter, index, length = int(msg["adapter"]), int(msg["index"]), int(msg["len"])
        flags = int(msg["flags"], 16)
        data = bytes.fromhex(msg["data"].replace("-", "")) if msg["data"] else b""
        if has_data and len(data) != length:
            raise error(
                number,
                f"{event} of l={length} shows {count(len(data), 'byte')} (a report of the kernel's "
                "own trace file cuts data at 64 bytes: use trace-cmd)",
            )
        reading = bool(flags & LINUX_I2C_M_RD)
        if (event == "i2c_write" and reading) or (event != "i2c_write" and not reading):
            raise error(number, f"{event} with flags f={flags:04x}: I2C_M_RD does not fit")
        transfer = open_transfers.get(adapter)
        if event == "i2c_reply":
            if transfer is None:
                if adapter in started:
                    raise error(number, f"i2c_reply on i2c-{adapter} outside a transfer")
                continue  # the capture began inside this transfer: its result is skipped too
            request = next((m for m in transfer.msgs if m.index == index), None)
            if request is None or not request.flags & LINUX_I2C_M_RD:
                raise error(number, f"i2c_reply to #{index}, which is not a read of the transfer")
            if (request.addr, request.length) != (int(msg["addr"], 16), length):
                raise error(
                    number,
                    f"i2c_reply to #{index} of a={int(msg['addr'], 16):03x} l={length}, but "
                    f"line {request.line} read a={request.addr:03x} l={request.length}",
                )
            if index in transfer.replies:
                raise error(number, f"a second i2c_reply to #{index}")
            transfer.replies[index] = data
            continue
        if index == 0:
            if transfer is not None:
                raise error(
                    number,
                    f"a transfer on i2c-{adapter} starts before the result of the one "
                    f"at line {transfer.line}",
                )
            transfer = open_transfers[adapter] = _Transfer(adapter, t, number)
            started.add(adapter)
        elif transfer is not None and transfer.replies:
            raise error(number, f"{event} #{index} after the replies of its transfer")
        elif transfer is None or index != len(transfer.msgs):
            if transfer is None and adapter not in started:
                continue  # the capture began inside this transfer (it is counted at its result)
            expected = 0 if transfer is None else len(transfer.msgs)
            raise error(number, f"{event} #{index} where message #{expected} was due")
        transfer.msgs.append(_Msg(index, int(msg["addr"], 16), flags, length, data, number))
    capture.incomplete += len(open_transfers)  # cut off by the end of the capture
    if not event_lines and not report_header:
        raise _NoEvents(f"{source}: no trace-cmd report lines")
    return capture


def _finish(
    capture: Capture,
    transfer: _Transfer,
    n: int,
    ret: int,
    number: int,
    error: Callable[[int, str], TraceCmdError],
) -> None:
    if n != len(transfer.msgs):
        raise error(
            number,
            f"i2c_result n={n}, but the transfer at line {transfer.line} has "
            f"{count(len(transfer.msgs), 'message')}",
        )
    if ret > n:
        raise error(number, f"i2c_result ret={ret} is more than its n={count(n, 'message')}")
    for m in transfer.msgs:
        capture.seen.add((transfer.adapter, m.addr))
    mine = [m for m in transfer.msgs if m.addr == capture.addr]
    if not mine:
        return
    msgs: list[dict[str, Any]] = []
    for position, m in enumerate(mine):
        ok = m.index < ret  # ret < 0 (an errno): none was carried out
        flags = 0 if position == len(mine) - 1 else VIRTIO_I2C_FLAGS_FAIL_NEXT
        if m.flags & LINUX_I2C_M_RD:
            data = transfer.replies.get(m.index) if ok else b""
            if data is None:
                raise error(
                    number,
                    f"i2c_result ret={ret} says message #{m.index} (line {m.line}) was read, "
                    "but it has no i2c_reply",
                )
            msgs.append(
                {"flags": flags | VIRTIO_I2C_FLAGS_M_RD, "len": m.length, "data": data, "status": 0}
            )
        else:
            msgs.append({"flags": flags, "len": m.length, "data": m.data, "status": 0})
        msgs[-1]["status"] = 0 if ok else 1
    capture.events.setdefault(transfer.adapter, []).append(
        {"kind": "i2c", "t": transfer.t, "msgs": msgs}
    )


# Reading the input


def _trace_cmd() -> str:
    path = shutil.which("trace-cmd")
    if path is None:
        raise TraceCmdError(
            "trace-cmd is not installed (apt-get install trace-cmd): it is needed to read a "
            "trace.dat; a saved `trace-cmd report` text needs no trace-cmd"
        )
    return path


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else ""


def _dat_release(program: str, path: Path) -> str:
    result = subprocess.run(
        [program, "report", "--uname", "-i", str(path)],
        capture_output=True,
        text=True,
        errors="replace",
        check=False,
    )
    for line in result.stdout.splitlines():
        uname = _UNAME.match(line.strip())
        if uname:
            return uname["release"]
    return ""


def read_capture(path: Path, addr: int) -> Capture:
    """Parse a trace.dat (with `trace-cmd report`) or a saved report for the transfers at `addr`."""
    try:
        with path.open("rb") as f:
            head = f.read(4096)
    except FileNotFoundError:
        raise TraceCmdError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise TraceCmdError(f"{path}: is a directory, not a trace-cmd file") from None
    except OSError as err:
        raise TraceCmdError(f"{path}: cannot read: {err.strerror or err}") from None
    if head.startswith(DAT_MAGIC):
        return _read_dat(path, addr)
    not_report = TraceCmdError(
        f"{path}: not a trace-cmd file (neither a trace.dat nor the text of `trace-cmd report`)"
    )
    if b"\0" in head:
        raise not_report
    try:
        # Tolerant, like the trace.dat path: task names are whatever the board's were.
        with path.open(encoding="utf-8", errors="replace") as text:
            return parse_report(text, addr, str(path))
    except _NoEvents:
        raise not_report from None


def _read_dat(path: Path, addr: int) -> Capture:
    program = _trace_cmd()
    release = _dat_release(program, path)
    with tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen(
            [program, "report", "-t", "-i", str(path)],
            stdout=subprocess.PIPE,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
        )
        assert proc.stdout is not None
        try:
            try:
                capture = parse_report(proc.stdout, addr, str(path))
            except _NoEvents:
                capture = None  # trace-cmd printed nothing: it says why below
            proc.stdout.close()
            status = proc.wait()
        finally:
            if proc.poll() is None:  # a parse error stopped reading: trace-cmd need not go on
                proc.kill()
                proc.wait()
        stderr.seek(0)
        message = _first_line(stderr.read().decode(errors="replace"))
        if status != 0:
            raise TraceCmdError(f"{path}: `trace-cmd report` failed: {message or 'no message'}")
        if capture is None:
            said = f" ({message})" if message else ""
            raise TraceCmdError(
                f"{path}: `trace-cmd report` printed no events{said}: the trace.dat is empty "
                "or damaged"
            )
    capture.kernel = capture.kernel or release
    return capture


# The command


def register_source(model: str) -> tuple[int, Literal["little", "big"]]:
    """The register width and byte order of `model` ("module:Class"), an SMBus model or not."""
    from roadtest.models.base import I2CModel, SMBusModel

    module_name, _, class_name = model.partition(":")
    if not module_name or not class_name:
        raise TraceCmdError(f"--model {model}: expected module:Class")
    try:
        module = importlib.import_module(module_name)
    except Exception as err:
        raise TraceCmdError(f"--model {model}: cannot import {module_name}: {err}") from None
    cls = getattr(module, class_name, None)
    if not isinstance(cls, type) or not issubclass(cls, I2CModel):
        raise TraceCmdError(f"--model {model}: {module_name} has no I2C model {class_name}")
    if not issubclass(cls, SMBusModel):
        return 0, "little"
    make: Any = cls  # models are made with no arguments, as the session makes them
    try:
        instance: SMBusModel = make()
    except Exception as err:
        raise TraceCmdError(
            f"--model {model}: cannot make one to learn its register width ({err}): give --regbytes"
        ) from None
    return instance.regbytes, instance.byteorder


@dataclass
class ImportResult:
    out: Path
    adapter: int
    transfers: int
    incomplete: int
    kernel: str


def import_trace_cmd(
    source: Path,
    out: Path,
    *,
    addr: int,
    compatible: str,
    test: str,
    device: str = "",
    adapter: int | None = None,
    model: str = "",
    regbytes: int | None = None,
    byteorder: Literal["little", "big"] | None = None,
) -> ImportResult:
    """Write the transfers at `addr` in a trace-cmd capture as the golden trace `out`.

    The trace has no model (model ""): replay answers from it alone. `model`
    only names the registers (header extra "registers") and, for an SMBus
    model, gives the register width and byte order unless `regbytes` and
    `byteorder` do.
    """
    if not 0 <= addr <= 0x3FF:
        raise TraceCmdError(f"--addr {addr:#x}: not an I2C address (0..0x3ff)")
    if regbytes is not None and not 0 <= regbytes <= 8:
        raise TraceCmdError(f"--regbytes {regbytes}: not 0..8")
    model_regbytes, model_order = register_source(model) if model else (0, "little")
    capture = read_capture(source, addr)
    chosen, events = capture.transfers(adapter)
    extra: dict[str, Any] = {"source": "trace-cmd", "adapter": chosen}
    if device:
        extra["device"] = device
    if model:
        extra["registers"] = model
    header = Header(
        kernel=capture.kernel,
        test=test,
        bus="i2c",
        address=addr,
        compatible=compatible,
        model="",
        regbytes=model_regbytes if regbytes is None else regbytes,
        byteorder=byteorder or model_order,
        extra=extra,
    )
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        write_trace_atomic(out, header, events)
    except OSError as err:
        raise TraceCmdError(f"{out}: cannot write: {err.strerror or err}") from None
    return ImportResult(out, chosen, len(events), capture.incomplete, capture.kernel)


def command(args: argparse.Namespace) -> int:
    result = import_trace_cmd(
        Path(args.input),
        Path(args.out),
        addr=args.addr,
        compatible=args.compatible,
        test=args.test,
        device=args.device,
        adapter=args.adapter,
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
        f"imported {count(result.transfers, 'transfer')} of i2c-{result.adapter} address "
        f"{args.addr:#04x} into {result.out}{skipped}"
    )
    return 0
