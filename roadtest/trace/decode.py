"""Register-level descriptions of trace events, for `roadtest trace show`/`diff` and replay reports.

A value the test set on its model (an `inject` marker) is shown in hex when
the model declares the `Input` as a register value (`Input[int](bits=16)`).

For an SMBus-style device (the header's regbytes > 0) an I2C transfer that is
one write of [register, values...] reads "write CONTROL(0x03) = 0x20"; a
write of [register] followed by a read reads "read VOUT1(0x01) -> 0x50".
Register names come from the model's register map (`register_map`,
roadtest.models.regmap), or for a model without one from its module's `REG_*`
constants (REG_CONTROL = 0x03 names register 0x03 "CONTROL"); the model is the
header's, or for a trace without one its extra "registers", imported only from
roadtest's own models (roadtest.models.*);
otherwise registers are shown by number. Every other transfer is shown as
its raw messages: "i2c w 01 02 | r 3: 00 11 22", except that for a chip of commands
(the model is a `CommandI2CModel`) a write that starts with an opcode reads by the
opcode's name: "i2c command MEASURE_SINGLE(0x2400)", its arguments after it.

An SPI message reads "spi cs0 mode 0, 8 bits, 10 MHz: w 0b | r 2: 0c 80": the chip
select, the first transfer's mode, word size and clock, then each transfer: `w` TX
only, `r N` RX only, `x TX -> RX` both, ERR for TRANS_ERR, a word wider than 8 bits as
its bytes in wire order without spaces; a transfer whose mode, word size or clock
differs from the first's names its own in brackets, and cs_change, lane counts and
delays are shown when set.
"""

from __future__ import annotations

import enum
import importlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Final

from roadtest.models.base import declared_inputs
from roadtest.models.command import CommandI2CModel
from roadtest.models.regmap import RegisterMap
from roadtest.text import printable
from roadtest.trace.format import Header
from roadtest.trace.gpio import Direction, IrqType
from roadtest.trace.i2c import VIRTIO_I2C_FLAGS_M_RD, VIRTIO_I2C_MSG_OK
from roadtest.trace.spi import VIRTIO_SPI_TRANS_OK, spi_mode, word_bytes

# Only our own models' modules are imported to name registers: a trace from
# elsewhere cannot make us import (and so run) anything else, not even
# another roadtest module with import-time effects (the guest's init).
_OUR_MODULE: Final = re.compile(r"roadtest\.models\.[a-z][a-z0-9_]*")

_IGNORED: Final = ("seq", "t")


def _our_module(model: str) -> ModuleType | None:
    """The module of `model` ("module:Class") when it is one of roadtest's own models' and
    imports; None otherwise."""
    module_name = model.partition(":")[0]
    if not _OUR_MODULE.fullmatch(module_name):
        return None
    try:
        return importlib.import_module(module_name)
    except Exception:  # a broken or missing module only costs the names
        return None


def register_names(model: str) -> dict[int, str]:
    """{address: name} of `model` ("module:Class"): its class's `register_map`, or else
    the `REG_*` int constants of its module (where two share an address the first
    defined names it).

    Empty when the module is not one of roadtest's own, or cannot be imported.
    """
    module = _our_module(model)
    if module is None:
        return {}
    regmap = getattr(getattr(module, model.partition(":")[2], None), "register_map", None)
    if isinstance(regmap, RegisterMap):
        return regmap.names()
    names: dict[int, str] = {}
    for name, value in vars(module).items():
        if name.startswith("REG_") and len(name) > 4 and type(value) is int and 0 <= value <= 0xFF:
            names.setdefault(value, name[4:])
    return names


def input_bits(model: str) -> dict[str, int]:
    """{attribute: bits} of the register-valued `Input`s of `model` ("module:Class", one of
    roadtest's own models): what to show in hex."""
    module = _our_module(model)
    cls = getattr(module, model.partition(":")[2], None) if module is not None else None
    if not isinstance(cls, type):
        return {}
    return {name: value.bits for name, value in declared_inputs(cls).items() if value.bits}


@dataclass(frozen=True)
class Opcodes:
    """How a chip of commands spells its opcodes: their size (most significant byte
    first) and names."""

    size: int
    names: Mapping[int, str]

    def name(self, opcode: int) -> str:
        hexa = f"0x{opcode:0{2 * self.size}X}"
        name = self.names.get(opcode)
        return f"{name}({hexa})" if name else hexa


def opcodes(model: str) -> Opcodes | None:
    """The opcodes of `model` ("module:Class", one of roadtest's own models) when it is a
    chip of commands (`CommandI2CModel`); None otherwise."""
    module = _our_module(model)
    cls = getattr(module, model.partition(":")[2], None) if module is not None else None
    if not (isinstance(cls, type) and issubclass(cls, CommandI2CModel)):
        return None
    return Opcodes(cls.opcode_bytes, dict(cls.opcode_names))


@dataclass(frozen=True)
class Access:
    """An I2C transfer read as a register access."""

    op: str  # "write", "read" or "select" (a write of the register pointer alone)
    reg: int
    values: tuple[int, ...] | None  # None: a read whose response is not known
    failed: bool


def body(event: Mapping[str, Any]) -> dict[str, Any]:
    """The event without its seq and timestamp: what two traces are compared by."""
    return {k: v for k, v in event.items() if k not in _IGNORED}


def _hex(data: object) -> str:
    if isinstance(data, (bytes, bytearray)):
        return " ".join(f"{b:02x}" for b in data)
    return repr(data)


def _name(names: type[enum.IntEnum], value: int, unknown: str) -> str:
    try:
        return names(value).name
    except ValueError:
        return unknown


def _plain(value: object) -> str:
    return value if isinstance(value, str) else repr(value)


class Decoder:
    """Describes the events of one trace; built from its header."""

    def __init__(
        self,
        header: Header,
        registers: Mapping[int, str] | None = None,
        limit: int | None = None,
    ) -> None:
        """`limit`: the longest line `describe` returns (its middle left out), None: no limit."""
        self.header = header
        self.limit = limit
        self.regbytes = header.regbytes
        self.byteorder = header.byteorder
        if registers is None:
            # A trace without a model (imported from hardware) may name one for its registers.
            named = header.model or header.extra.get("registers", "")
            registers = register_names(named) if isinstance(named, str) else {}
        self.registers = dict(registers)
        self.inputs = input_bits(header.model) if header.model else {}
        self.opcodes = opcodes(header.model) if header.model else None

    # Pieces

    def reg(self, addr: int) -> str:
        name = self.registers.get(addr)
        return f"{name}({addr:#04x})" if name else f"{addr:#04x}"

    def regs(self, first: int, count: int) -> str:
        if count <= 1:
            return self.reg(first)
        return f"{self.reg(first)}..{self.reg((first + count - 1) & 0xFF)}"

    def value(self, value: int) -> str:
        return f"{value:#0{2 + 2 * max(self.regbytes, 1)}x}"

    def values(self, values: Sequence[int]) -> str:
        return " ".join(self.value(v) for v in values)

    def _split(self, data: bytes) -> tuple[int, ...]:
        rb = self.regbytes
        return tuple(
            int.from_bytes(data[i : i + rb], self.byteorder) for i in range(0, len(data), rb)
        )

    def access(self, event: Mapping[str, Any]) -> Access | None:
        """The transfer as a register access, or None when it is not one (or not SMBus-style)."""
        rb = self.regbytes
        msgs = event.get("msgs")
        if event.get("kind") != "i2c" or rb <= 0 or not isinstance(msgs, list):
            return None
        try:
            flags = [int(m["flags"]) for m in msgs]
            datas = [m["data"] for m in msgs]
            lengths = [int(m["len"]) for m in msgs]
            failed = any(m["status"] != VIRTIO_I2C_MSG_OK for m in msgs)
        except (KeyError, TypeError, ValueError):
            return None
        if not all(isinstance(d, (bytes, bytearray)) for d in datas):
            return None
        reads = [bool(f & VIRTIO_I2C_FLAGS_M_RD) for f in flags]
        if len(msgs) == 1 and not reads[0] and datas[0]:
            data = bytes(datas[0])
            if len(data) == 1:
                return Access("select", data[0], (), failed)
            if (len(data) - 1) % rb == 0:
                return Access("write", data[0], self._split(data[1:]), failed)
            return None
        if len(msgs) == 2 and reads == [False, True] and len(datas[0]) == 1:
            length = lengths[1]
            if length <= 0 or length % rb:
                return None
            data = bytes(datas[1])
            if len(data) == length:
                return Access("read", datas[0][0], self._split(data), failed)
            return Access("read", datas[0][0], None, failed)
        return None

    def _describe_access(self, acc: Access, count: int | None = None) -> str:
        if acc.op == "select":
            return f"select {self.reg(acc.reg)}" + (" -> NACK" if acc.failed else "")
        n = count if acc.values is None else len(acc.values)
        where = self.regs(acc.reg, n or 1)
        if acc.op == "write":
            assert acc.values is not None
            return f"write {where} = {self.values(acc.values)}" + (" -> NACK" if acc.failed else "")
        if acc.failed:
            return f"read {where} -> NACK"
        if acc.values is None:
            return f"read {where}"
        return f"read {where} -> {self.values(acc.values)}"

    def _read_count(self, event: Mapping[str, Any]) -> int:
        try:
            return int(event["msgs"][1]["len"]) // self.regbytes
        except (KeyError, IndexError, TypeError, ValueError, ZeroDivisionError):
            return 1

    def raw_i2c(self, msgs: object) -> str:
        if not isinstance(msgs, list):
            return f"i2c {msgs!r}"
        parts = []
        for m in msgs:
            if not isinstance(m, Mapping):
                parts.append(repr(m))
                continue
            failed = m.get("status", VIRTIO_I2C_MSG_OK) != VIRTIO_I2C_MSG_OK
            data = m.get("data", b"")
            if isinstance(m.get("flags"), int) and m["flags"] & VIRTIO_I2C_FLAGS_M_RD:
                shown = "NACK" if failed else (_hex(data) if data else "?")
                parts.append(f"r {m.get('len')}: {shown}")
            elif (command := self._command(data)) is not None:
                parts.append(command + (" -> NACK" if failed else ""))
            else:
                parts.append(f"w {_hex(data) if data else '-'}" + (" NACK" if failed else ""))
        return "i2c " + " | ".join(parts)

    def _command(self, data: object) -> str | None:
        """A write to a chip of commands by its opcode's name, its arguments after it."""
        ops = self.opcodes
        if ops is None or not isinstance(data, (bytes, bytearray)) or len(data) < ops.size:
            return None
        text = f"command {ops.name(int.from_bytes(data[: ops.size], 'big'))}"
        args = bytes(data[ops.size :])
        return f"{text} {_hex(args)}" if args else text

    def spi(self, event: Mapping[str, Any]) -> str:
        """An SPI message, one line (see the module's docstring)."""
        xfers = event.get("xfers")
        head = f"spi cs{event.get('cs')}"
        if not isinstance(xfers, list) or not all(isinstance(x, Mapping) for x in xfers):
            return f"{head} {xfers!r}"
        if not xfers:
            return head
        first = _spi_clocking(xfers[0])
        parts = []
        for x in xfers:
            own = _spi_clocking(x)
            text = f"[{own}] " if own != first else ""
            parts.append(text + _spi_xfer(x))
        return f"{head} {first}: " + " | ".join(parts)

    def gpio_value(self, op: object, value: object) -> str:
        """A GPIO request's value: directions and IRQ types by their virtio-gpio names."""
        if op in ("set_direction", "get_direction") and isinstance(value, int):
            return _name(Direction, value, str(value))
        if op == "irq_type" and isinstance(value, int):
            return _name(IrqType, value, f"{value:#x}")
        return _plain(value)

    def _injected(self, detail: Mapping[str, Any]) -> Mapping[str, Any]:
        """An inject marker's detail, its value in hex when the model's Input is a register."""
        bits = self.inputs.get(detail.get("attr"))  # type: ignore[arg-type]
        value = detail.get("value")
        if bits is None or type(value) is not int or value < 0:
            return detail
        return {**detail, "value": f"{value:#0{2 + -(-bits // 4)}x}"}

    def _line(self, event: Mapping[str, Any]) -> str:
        return f"{event.get('name', '?')}({event.get('line', '?')})"

    # What the commands and the replayer use

    def describe(self, event: Mapping[str, Any]) -> str:
        """One line for an event (any event map: a malformed one is shown as it is), with
        control characters escaped and at most `limit` characters long."""
        return printable(self._describe(event), self.limit)

    def _describe(self, event: Mapping[str, Any]) -> str:
        kind = event.get("kind")
        if kind == "i2c":
            acc = self.access(event)
            if acc is not None:
                return self._describe_access(acc, self._read_count(event))
            return self.raw_i2c(event.get("msgs"))
        if kind == "spi":
            return self.spi(event)
        if kind == "gpio":
            op = event.get("op")
            value = self.gpio_value(op, event.get("value"))
            failed = event.get("status", VIRTIO_I2C_MSG_OK) != VIRTIO_I2C_MSG_OK
            text = f"gpio {self._line(event)} {op}"
            if op in ("get_direction", "get_value"):
                return f"{text} -> {'ERR' if failed else value}"
            if op in ("set_direction", "set_value", "irq_type"):
                text = f"{text} {value}"
            return text + (" -> ERR" if failed else "")
        if kind == "irq":
            return f"irq {self._line(event)} level {event.get('level')}"
        if kind == "marker":
            detail = event.get("detail")
            text = f"marker {event.get('what')}"
            if detail is None:
                return text
            if isinstance(detail, Mapping):
                if event.get("what") == "inject":
                    detail = self._injected(detail)
                return text + "".join(f" {k}={_plain(v)}" for k, v in detail.items())
            return f"{text} {_plain(detail)}"
        rest = " ".join(f"{k}={_plain(v)}" for k, v in body(event).items() if k != "kind")
        return f"{kind} {rest}".rstrip()

    def describe_expected_actual(
        self, expected: Mapping[str, Any], actual: Mapping[str, Any]
    ) -> str:
        """What differs between a recorded event and what happened, in one line."""
        return printable(self._expected_actual(expected, actual), self.limit)

    def _expected_actual(self, expected: Mapping[str, Any], actual: Mapping[str, Any]) -> str:
        got, want = self.describe(actual), self.describe(expected)
        if expected.get("kind") == actual.get("kind") == "i2c":
            a, e = self.access(actual), self.access(expected)
            if (
                a is not None
                and e is not None
                and (a.op, a.reg) == (e.op, e.reg)
                and a.values is not None
                and e.values is not None
                and len(a.values) == len(e.values)
            ):
                if a.failed != e.failed:
                    return f"{got}, expected {'NACK' if e.failed else 'OK'}"
                if a.values != e.values:
                    return f"{got}, expected {self.values(e.values)}"
        elif expected.get("kind") == actual.get("kind") == "spi":
            why = _spi_difference(expected, actual)
            if why is not None:
                return f"{why}; got: {got}; expected: {want}"
        elif expected.get("kind") == actual.get("kind") == "gpio":
            same = ("line", "op", "status")
            if all(expected.get(k) == actual.get(k) for k in same) and expected.get(
                "value"
            ) != actual.get("value"):
                return f"{got}, expected {self.gpio_value(expected.get('op'), expected['value'])}"
        elif expected.get("kind") == actual.get("kind") == "irq":
            if expected.get("line") == actual.get("line") and expected.get("level") != actual.get(
                "level"
            ):
                return f"{got}, expected level {expected.get('level')}"
        if got == want and body(expected) != body(actual):
            fields = ", ".join(differing_fields(expected, actual))
            return f"got: {got}; expected: {want} (they differ in {fields})"
        return f"got: {got}; expected: {want}"


def differing_fields(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> list[str]:
    """The keys (msgs[i].key for I2C messages) in which two events differ, seq and t aside."""
    out: list[str] = []
    for key in sorted(set(body(expected)) | set(body(actual)), key=str):
        e, a = expected.get(key), actual.get(key)
        if e == a:
            continue
        if (
            key in ("msgs", "xfers")
            and isinstance(e, list)
            and isinstance(a, list)
            and len(e) == len(a)
        ):
            for i, (em, am) in enumerate(zip(e, a, strict=True)):
                if isinstance(em, Mapping) and isinstance(am, Mapping):
                    out += [
                        f"{key}[{i}].{k}"
                        for k in sorted(set(em) | set(am), key=str)
                        if em.get(k) != am.get(k)
                    ]
                elif em != am:
                    out.append(f"{key}[{i}]")
        else:
            out.append(key)
    return out


def hz(freq: object) -> str:
    """A clock rate: "10 MHz", "400 kHz", "1234 Hz"."""
    if type(freq) is not int:
        return f"{freq!r} Hz"
    if freq and freq % 1_000_000 == 0:
        return f"{freq // 1_000_000} MHz"
    if freq and freq % 1000 == 0:
        return f"{freq // 1000} kHz"
    return f"{freq} Hz"


def _spi_clocking(x: Mapping[str, Any]) -> str:
    mode, bpw = x.get("mode"), x.get("bits_per_word")
    shown_mode = spi_mode(mode) if type(mode) is int else f"mode {mode!r}"
    return f"{shown_mode}, {bpw} bits, {hz(x.get('freq'))}"


def _spi_data(data: bytes, bits_per_word: object) -> str:
    size = word_bytes(bits_per_word) if type(bits_per_word) is int else 1
    if size == 1:
        return _hex(data)
    return " ".join(data[i : i + size].hex() for i in range(0, len(data), size))


# What a transfer's line names when it is set (the lane counts: when not SINGLE).
_SPI_EXTRAS = (
    ("tx_nbits", "tx_nbits"),
    ("rx_nbits", "rx_nbits"),
    ("word_delay_ns", "word delay {} ns"),
    ("cs_setup_ns", "cs setup {} ns"),
    ("cs_delay_hold_ns", "cs hold {} ns"),
    ("cs_change_delay_inactive_ns", "cs inactive {} ns"),
)


def _spi_xfer(x: Mapping[str, Any]) -> str:
    tx, rx, bpw = x.get("tx"), x.get("rx"), x.get("bits_per_word")
    failed = x.get("result", VIRTIO_SPI_TRANS_OK) != VIRTIO_SPI_TRANS_OK
    sent = _spi_data(tx, bpw) if isinstance(tx, bytes) and tx else "-"
    if failed:
        got = "ERR"
    elif isinstance(rx, bytes):
        got = _spi_data(rx, bpw) if rx else "?"  # "?": not answered (a driver's question)
    else:
        got = repr(rx)
    if tx is not None and rx is not None:
        text = f"x {sent} -> {got}"
    elif rx is not None:
        text = f"r {x.get('len')}: {got}"
    elif tx is not None:
        text = f"w {sent}" + (" ERR" if failed else "")
    else:
        text = f"none ({x.get('len')} bytes)" + (" ERR" if failed else "")
    for key, what in _SPI_EXTRAS:
        value = x.get(key)
        if key.endswith("nbits"):
            if value not in (0, 1, None):
                text += f" {what} {value}"
        elif value:
            text += " " + what.format(value)
    if x.get("cs_change"):
        text += " cs_change"
    return text


# What of an SPI transfer replay compares besides its buffers, in the order it reports.
_SPI_QUESTION = (
    "mode",
    "bits_per_word",
    "freq",
    "cs_change",
    "len",
    "tx_nbits",
    "rx_nbits",
    "word_delay_ns",
    "cs_setup_ns",
    "cs_delay_hold_ns",
    "cs_change_delay_inactive_ns",
)


def _spi_difference(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> str | None:
    """The first way the driver's SPI message (`actual`) differs from the recorded one, as
    the question goes (the answers, RX and results, are the trace's): "cs0 transfer 1:
    TX byte 2 is 0x12, expected 0x34"; None if it does not."""
    cs, want_cs = actual.get("cs"), expected.get("cs")
    if cs != want_cs:
        return f"chip select {cs}, expected chip select {want_cs}"
    got, want = actual.get("xfers"), expected.get("xfers")
    if not isinstance(got, list) or not isinstance(want, list):
        return None
    if len(got) != len(want):
        return f"cs{cs}: {len(got)} transfers in the message, expected {len(want)}"
    for i, (a, e) in enumerate(zip(got, want, strict=True)):
        if not isinstance(a, Mapping) or not isinstance(e, Mapping):
            continue
        where = f"cs{cs} transfer {i}"
        for key, buffer in (("tx", "a TX"), ("rx", "an RX")):
            has, had = a.get(key) is not None, e.get(key) is not None
            if has != had:
                return (
                    f"{where} has {buffer if has else 'no ' + buffer.split()[1]} buffer, "
                    f"expected {'one' if had else 'none'}"
                )
        for key in _SPI_QUESTION:
            va, ve = a.get(key), e.get(key)
            if va != ve:
                if key == "mode" and type(va) is int and type(ve) is int:
                    return f"{where}: {spi_mode(va)}, expected {spi_mode(ve)}"
                if key == "freq":
                    return f"{where}: {hz(va)}, expected {hz(ve)}"
                return f"{where}: {key} {va}, expected {ve}"
        ta, te = a.get("tx"), e.get("tx")
        if isinstance(ta, bytes) and isinstance(te, bytes) and ta != te:
            j = next(j for j, (x, y) in enumerate(zip(ta, te, strict=False)) if x != y)
            return f"{where}: TX byte {j} is {ta[j]:#04x}, expected {te[j]:#04x}"
    return None
