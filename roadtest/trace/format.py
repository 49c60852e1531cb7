"""The trace file format, schema version 2 (the full, versioned schema is SCHEMA.md here).

A trace (``*.rtrace``) records what one driver did with one device in one
test. The file is ONE lz4 frame (linked blocks, a checksum per block and one
over the content) whose decompressed content is a stream of msgpack objects:

- first the header map: ``{"format": "roadtest-trace", "schema": 1 or 2,
  "kernel": str, "test": str, "bus": "i2c" | "spi", "address": int,
  "compatible": str, "model": "module:Class" or "", "regbytes": int,
  "byteorder": "little" | "big", "created": float}``; unknown extra keys
  are kept (forward compatible); a bigger ``schema`` is refused; a trace is
  written with the lowest schema that has its bus's events (`schema_for`): 1 for
  I2C, 2 for SPI, so that an older roadtest still reads an I2C trace;
- then one map per event: ``{"seq": 0, 1, 2, ..., "t": time.monotonic_ns(),
  "kind": str, ...}`` with, per kind,

  - ``i2c``: ``"msgs": [{"flags", "len", "data", "status"}, ...]``, one
    virtio-i2c transfer (flags bit 0 FAIL_NEXT, bit 1 M_RD; ``data`` is what
    was written, or the response read, ``b""`` when the read failed;
    status 0 OK, 1 ERR);
  - ``spi`` (schema 2): ``"cs": int, "xfers": [{"bits_per_word", "cs_change",
    "tx_nbits", "rx_nbits", "mode", "freq", "word_delay_ns", "cs_setup_ns",
    "cs_delay_hold_ns", "cs_change_delay_inactive_ns", "len", "tx", "rx",
    "result"}, ...]``, one virtio-spi message (the transfers of one chip-select
    assertion; ``tx`` nil without a tx_buf, ``rx`` nil without an rx_buf and
    ``b""`` when the transfer failed; result 0 OK, 2 TRANS_ERR);
  - ``gpio``: ``"line", "name", "op", "value", "status"``, a request from the
    driver (``op`` in GPIO_OPS);
  - ``irq``: ``"line", "name", "level"``, an input level a model drove;
  - ``marker``: ``"what", "detail"``, what the test did (bind, unbind, inject, note).

The writer flushes an lz4 block after every ``flush_every`` events, so a
file cut off at a flush (a killed run) is a readable prefix: `read_trace`
with ``strict=False`` returns its events quietly, ``strict=True`` (the
default) raises `TraceError` at the point of truncation once the events
before it have been returned. Reading streams: the file is read block by
block and decoded incrementally, never loaded whole.
"""

from __future__ import annotations

import errno
import os
import reprlib
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO, Final, Literal

import lz4.frame
import msgpack

from roadtest.atomic import replacing
from roadtest.errors import RoadtestError
from roadtest.text import printable
from roadtest.trace.gpio import MAX_LINE
from roadtest.trace.i2c import (
    I2C_MSG_MAX_LEN,
    VIRTIO_I2C_FLAGS_M_RD,
    VIRTIO_I2C_MSG_ERR,
    VIRTIO_I2C_MSG_OK,
)
from roadtest.trace.spi import (
    MAX_CS,
    MODE_BITS,
    NBITS,
    SPI_XFER_MAX_LEN,
    VIRTIO_SPI_PARAM_ERR,
    VIRTIO_SPI_TRANS_ERR,
    VIRTIO_SPI_TRANS_OK,
    word_bytes,
)

FORMAT: Final = "roadtest-trace"
SCHEMA_VERSION: Final = 2  # the newest this roadtest reads and writes
SUFFIX: Final = ".rtrace"

KINDS: Final = frozenset({"i2c", "spi", "gpio", "irq", "marker"})
# The schema that brought each kind in (the others are schema 1's).
KIND_SCHEMA: Final = {"spi": 2}
# An SPI transfer's fields besides its data: the head's, by the spec's names, and their top.
SPI_HEAD_FIELDS: Final = (
    ("bits_per_word", 32),
    ("cs_change", 1),
    ("tx_nbits", 8),
    ("rx_nbits", 8),
    ("mode", MODE_BITS),
    ("freq", 0xFFFFFFFF),
    ("word_delay_ns", 0xFFFFFFFF),
    ("cs_setup_ns", 0xFFFFFFFF),
    ("cs_delay_hold_ns", 0xFFFFFFFF),
    ("cs_change_delay_inactive_ns", 0xFFFFFFFF),
)


def schema_for(bus: str) -> int:
    """The schema a trace of a device on `bus` is written with: the lowest that has its
    bus's events (an older roadtest then still reads a trace it could read before)."""
    return 2 if bus == "spi" else 1


GPIO_OPS: Final = frozenset(
    {"set_direction", "get_direction", "set_value", "get_value", "irq_type", "unmask", "mask"}
)
MARKERS: Final = frozenset({"bind", "unbind", "inject", "note"})  # the ones roadtest writes


# How the writer compresses: HC level 3 with linked 64 KiB blocks compresses
# small flushed blocks against the earlier ones (bench/bench_trace.py).
COMPRESSION_LEVEL: Final = lz4.frame.COMPRESSIONLEVEL_MINHC
BLOCK_CHECKSUMS: Final = True  # verify each block before its events are returned

# What the reader accepts, so that a corrupt length cannot make it allocate gigabytes.
MAX_EVENT_BYTES: Final = 1 << 20  # one str or bytes value
_MAX_BUFFER: Final = 16 << 20  # one undecoded object plus one block
_MAX_CONTAINER: Final = 1 << 16  # items of one array or map
# How deep arrays and maps may nest: printing or comparing a deeper value
# (a marker's detail 1000 deep) would hit Python's recursion limit.
MAX_DEPTH: Final = 32

_LZ4_MAGIC: Final = b"\x04\x22\x4d\x18"
_LZ4_BLOCK_MAX: Final = {4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20}

_HEADER_KEYS: Final = (
    "format",
    "schema",
    "kernel",
    "test",
    "bus",
    "address",
    "compatible",
    "model",
    "regbytes",
    "byteorder",
    "created",
)


class TraceError(RoadtestError):
    """A trace file that cannot be read: where (path and byte offset) and what.

    `offset` is a byte offset in the file when `in_stream` is false, else in the
    decompressed stream (the message says which); None when there is no place
    to point at (the file cannot be opened). `seq` names the event, when known.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        offset: int | None,
        what: str,
        *,
        in_stream: bool = False,
        seq: int | None = None,
    ) -> None:
        self.path = str(path)
        self.offset = offset
        self.what = what
        self.in_stream = in_stream
        self.seq = seq
        if offset is None:
            detail = what
        elif in_stream:
            detail = f"byte {offset} of the decompressed stream: {what}"
        else:
            detail = f"byte {offset}: {what}"
        self.detail = printable(detail)  # the message without the path
        # A file name from someone else's golden directory goes to a terminal too.
        super().__init__(f"{printable(self.path, _MAX_SHOWN)}: {self.detail}")


_MAX_SHOWN: Final = 400  # characters of one value in a message


class TraceWriteError(RoadtestError):
    """A trace could not be written: its file system is full, say. One line naming the
    file, the error's name (ENOSPC) and, for a full one, the file system's mount point."""

    def __init__(self, path: str | os.PathLike[str], err: OSError) -> None:
        self.path = str(path)
        self.errno = err.errno
        name = errno.errorcode.get(err.errno or 0, "")
        if err.errno in (errno.ENOSPC, errno.EDQUOT):
            what = "full" if err.errno == errno.ENOSPC else "over its quota"
            why = (
                f"the file system at {_mount_point(Path(path))} is {what} ({name}): "
                "free some space there"
            )
        else:
            why = f"{err.strerror or err} ({name})" if name else str(err)
        super().__init__(f"cannot write the trace {printable(self.path, _MAX_SHOWN)}: {why}")


def _mount_point(path: Path) -> Path:
    path = Path(os.path.abspath(path))
    while not path.is_dir() or not os.path.ismount(path):
        if path.parent == path:
            break
        path = path.parent
    return path


# The writers' failures in this process, first first: `roadtest record` names the first
# in its last line (pytest reports them as the tests' failures).
_write_failures: list[TraceWriteError] = []


def write_failures() -> list[TraceWriteError]:
    """Every TraceWriter's failure in this process so far (one per writer, at most)."""
    return list(_write_failures)


# Values from a trace in error messages: bounded in size and depth, escaped.
_repr = reprlib.Repr()
_repr.maxlevel = 3
_repr.maxstring = 60
_repr.maxother = 60


def shown(value: object) -> str:
    """A value read from a trace, for a message: short, one line, no terminal escapes."""
    return printable(_repr.repr(value), _MAX_SHOWN)


def _type_name(value: object) -> str:
    return type(value).__name__


def _want_int(where: str, key: str, value: object, low: int = 0, high: int | None = None) -> int:
    if type(value) is not int:
        raise ValueError(f"{where}: {key!r} must be an int, not {_type_name(value)}")
    if value < low or (high is not None and value > high):
        bound = f"{low}..{high}" if high is not None else f">= {low}"
        raise ValueError(f"{where}: {key!r} is {value}, not {bound}")
    return value


def _want_str(where: str, key: str, value: object) -> str:
    if type(value) is not str:
        raise ValueError(f"{where}: {key!r} must be a str, not {_type_name(value)}")
    return value


def _want_shallow(where: str, key: object, value: object) -> None:
    """ValueError if `value` nests arrays or maps more than MAX_DEPTH deep."""
    level: list[object] = [value]
    for _ in range(MAX_DEPTH + 1):
        below: list[object] = []
        for item in level:
            if type(item) is dict:
                below += item.keys()
                below += item.values()
            elif type(item) in (list, tuple):
                below += item  # type: ignore[arg-type]
        if not below:
            return
        level = below
    raise ValueError(f"{where}: {shown(key)} nests more than {MAX_DEPTH} levels deep")


def _get(where: str, event: Mapping[str, Any], key: str) -> Any:
    try:
        return event[key]
    except KeyError:
        raise ValueError(f"{where}: missing {key!r}") from None


@dataclass(kw_only=True)
class Header:
    """What the trace is of: the first map of the file (keyword arguments only)."""

    kernel: str  # the guest kernel's release
    test: str  # the pytest node id
    address: int
    compatible: str
    bus: str = "i2c"
    model: str = ""  # "module:Class" of the model, "" if none
    regbytes: int = 0  # register width, 0 when the device is not SMBus-style
    byteorder: Literal["little", "big"] = "little"
    created: float = field(default_factory=time.time)  # unix time
    extra: dict[str, Any] = field(default_factory=dict)  # unknown keys, kept as read
    # The schema the file declares, once read (0: not read; written as `schema_for(bus)`).
    schema: int = field(default=0, compare=False)

    def to_map(self) -> dict[str, Any]:
        known = {
            "format": FORMAT,
            "schema": schema_for(self.bus),
            "kernel": self.kernel,
            "test": self.test,
            "bus": self.bus,
            "address": self.address,
            "compatible": self.compatible,
            "model": self.model,
            "regbytes": self.regbytes,
            "byteorder": self.byteorder,
            "created": self.created,
        }
        return {**{k: v for k, v in self.extra.items() if k not in known}, **known}

    @classmethod
    def from_map(cls, header: object) -> Header:
        """The header of a map as read; ValueError says what is wrong with it."""
        if not isinstance(header, dict):
            raise ValueError(
                f"not a roadtest trace: it starts with a msgpack {_type_name(header)}, "
                "not the header map"
            )
        fmt = header.get("format")
        if fmt != FORMAT:
            raise ValueError(f"not a roadtest trace: format is {shown(fmt)}, not {FORMAT!r}")
        schema = _want_int("header", "schema", header.get("schema"), low=1)
        if schema > SCHEMA_VERSION:
            raise ValueError(
                f"header: schema {schema} is newer than this roadtest supports ({SCHEMA_VERSION})"
            )
        for key in _HEADER_KEYS:
            if key not in header:
                raise ValueError(f"header: missing {key!r}")
        byteorder = header["byteorder"]
        if byteorder not in ("little", "big"):
            raise ValueError(f"header: 'byteorder' is {shown(byteorder)}, not 'little' or 'big'")
        created = header["created"]
        if type(created) not in (float, int):
            raise ValueError(f"header: 'created' must be a float, not {_type_name(created)}")
        extra = {k: v for k, v in header.items() if k not in _HEADER_KEYS}
        for key, value in extra.items():
            _want_shallow("header", key, value)
        return cls(
            kernel=_want_str("header", "kernel", header["kernel"]),
            test=_want_str("header", "test", header["test"]),
            bus=_want_str("header", "bus", header["bus"]),
            address=_want_int("header", "address", header["address"], high=0x3FF),
            compatible=_want_str("header", "compatible", header["compatible"]),
            model=_want_str("header", "model", header["model"]),
            regbytes=_want_int("header", "regbytes", header["regbytes"], high=8),
            byteorder="little" if byteorder == "little" else "big",
            created=float(created),
            extra=extra,
            schema=schema,
        )


def validate_event(
    event: Mapping[str, Any], seq: int | None = None, schema: int = SCHEMA_VERSION
) -> None:
    """Check one event map against the schema; ValueError names the event and the problem.

    `seq` is the sequence number the event must have (None: any); `schema` the one its
    trace declares (a kind a later schema brought in is refused in an earlier one's).
    """
    if not _valid_i2c_event(event, seq):
        _validate_event(event, seq, schema)


def _valid_i2c_event(event: Mapping[str, Any], seq: int | None) -> bool:
    """True for a valid I2C event, by a quicker test (the recorder writes one per transfer).

    False for any other event: `_validate_event` then checks it and says what is wrong.
    """
    got_seq, t, msgs = event.get("seq"), event.get("t"), event.get("msgs")
    if (
        type(got_seq) is not int
        or got_seq < 0
        or (seq is not None and got_seq != seq)
        or type(t) is not int
        or t < 0
        or event.get("kind") != "i2c"
        or type(msgs) is not list
        or not msgs
        or len(event) != 4  # extra keys: checked (for depth) by _validate_event
    ):
        return False
    for msg in msgs:
        if type(msg) is not dict or len(msg) != 4:
            return False
        flags, length, data, status = (
            msg.get("flags"),
            msg.get("len"),
            msg.get("data"),
            msg.get("status"),
        )
        if (
            type(flags) is not int
            or type(length) is not int
            or type(data) is not bytes
            or type(status) is not int
            or not 0 <= flags <= 0xFFFFFFFF
            or not 0 <= length <= I2C_MSG_MAX_LEN
            or not 0 <= status <= VIRTIO_I2C_MSG_ERR
        ):
            return False
        if flags & VIRTIO_I2C_FLAGS_M_RD and status != VIRTIO_I2C_MSG_OK:
            if data:
                return False
        elif len(data) != length:
            return False
    return True


def _validate_event(event: Mapping[str, Any], seq: int | None, schema: int) -> None:
    got_seq = event.get("seq")
    if "seq" not in event:
        raise ValueError(f"{'event' if seq is None else f'event seq {seq}'}: missing 'seq'")
    where = f"event seq {got_seq}" if type(got_seq) is int else f"event after seq {seq}"
    if seq is not None and got_seq != seq:
        if type(got_seq) is not int:
            raise ValueError(f"event seq {seq}: 'seq' is {shown(got_seq)}, not an int")
        raise ValueError(f"{where}: seq is not consecutive (expected seq {seq})")
    _want_int(where, "seq", _get(where, event, "seq"))
    _want_int(where, "t", _get(where, event, "t"))
    if "sim" in event:
        _want_int(where, "sim", event["sim"])
    kind = _want_str(where, "kind", _get(where, event, "kind"))
    where = f"{where} ({printable(kind, 60)})"
    since = KIND_SCHEMA.get(kind, 1)
    if since > schema:
        raise ValueError(
            f"{where}: the {kind!r} kind is schema {since}'s, and this trace is schema {schema}"
        )
    if kind == "i2c":
        msgs = _get(where, event, "msgs")
        if not isinstance(msgs, (list, tuple)) or not msgs:
            raise ValueError(f"{where}: 'msgs' must be a non-empty list")
        for i, msg in enumerate(msgs):
            _validate_i2c_msg(f"{where}: msgs[{i}]", msg)
    elif kind == "spi":
        _want_int(where, "cs", _get(where, event, "cs"), high=MAX_CS)
        xfers = _get(where, event, "xfers")
        if not isinstance(xfers, (list, tuple)) or not xfers:
            raise ValueError(f"{where}: 'xfers' must be a non-empty list")
        failed = False
        for i, xfer in enumerate(xfers):
            ok = _validate_spi_xfer(f"{where}: xfers[{i}]", xfer)
            if ok and failed:
                raise ValueError(
                    f"{where}: xfers[{i}] is OK after a failed transfer (a message stops at "
                    "its first failure)"
                )
            failed |= not ok
    elif kind == "gpio":
        _want_int(where, "line", _get(where, event, "line"), high=MAX_LINE)
        _want_str(where, "name", _get(where, event, "name"))
        op = _get(where, event, "op")
        if type(op) is not str or op not in GPIO_OPS:
            raise ValueError(f"{where}: unknown op {shown(op)}")
        _want_int(where, "value", _get(where, event, "value"), high=0xFFFFFFFF)
        _want_int(where, "status", _get(where, event, "status"), high=VIRTIO_I2C_MSG_ERR)
    elif kind == "irq":
        _want_int(where, "line", _get(where, event, "line"), high=MAX_LINE)
        _want_str(where, "name", _get(where, event, "name"))
        _want_int(where, "level", _get(where, event, "level"), high=1)
    elif kind == "marker":
        _want_str(where, "what", _get(where, event, "what"))
        _get(where, event, "detail")
    else:
        raise ValueError(f"{where}: unknown kind (not one of {', '.join(sorted(KINDS))})")
    for key, value in event.items():
        _want_shallow(where, key, value)


def _validate_i2c_msg(where: str, msg: object) -> None:
    if not isinstance(msg, dict):
        raise ValueError(f"{where}: must be a map, not {_type_name(msg)}")
    flags = _want_int(where, "flags", _get(where, msg, "flags"), high=0xFFFFFFFF)
    length = _want_int(where, "len", _get(where, msg, "len"), high=I2C_MSG_MAX_LEN)
    data = _get(where, msg, "data")
    if type(data) is not bytes:
        raise ValueError(f"{where}: 'data' must be bytes, not {_type_name(data)}")
    status = _want_int(where, "status", _get(where, msg, "status"), high=VIRTIO_I2C_MSG_ERR)
    if not flags & VIRTIO_I2C_FLAGS_M_RD:
        if len(data) != length:
            raise ValueError(f"{where}: a write of 'len' {length} has {len(data)} data bytes")
    elif status == VIRTIO_I2C_MSG_OK and len(data) != length:
        raise ValueError(f"{where}: a read of 'len' {length} returned {len(data)} bytes")
    elif status != VIRTIO_I2C_MSG_OK and data:
        raise ValueError(f"{where}: a failed read has {len(data)} data bytes, not none")


def _validate_spi_xfer(where: str, xfer: object) -> bool:
    """Check one transfer of an SPI event; whether it succeeded."""
    if not isinstance(xfer, dict):
        raise ValueError(f"{where}: must be a map, not {_type_name(xfer)}")
    head = {
        key: _want_int(where, key, _get(where, xfer, key), high=top) for key, top in SPI_HEAD_FIELDS
    }
    if not head["bits_per_word"]:
        raise ValueError(f"{where}: 'bits_per_word' is 0, not 1..32")
    for key in ("tx_nbits", "rx_nbits"):
        if head[key] not in NBITS:
            raise ValueError(f"{where}: {key!r} is {head[key]}, not 0, 1, 2, 4 or 8")
    length = _want_int(where, "len", _get(where, xfer, "len"), high=SPI_XFER_MAX_LEN)
    size = word_bytes(head["bits_per_word"])
    if length % size:
        raise ValueError(
            f"{where}: 'len' {length} is not a whole number of {size}-byte words "
            f"({head['bits_per_word']} bits per word)"
        )
    tx, rx = _get(where, xfer, "tx"), _get(where, xfer, "rx")
    for key, data in (("tx", tx), ("rx", rx)):
        if data is not None and type(data) is not bytes:
            raise ValueError(f"{where}: {key!r} must be bytes or nil, not {_type_name(data)}")
    result = _want_int(where, "result", _get(where, xfer, "result"), high=VIRTIO_SPI_TRANS_ERR)
    if result == VIRTIO_SPI_PARAM_ERR:
        raise ValueError(
            f"{where}: 'result' is 1 (PARAM_ERR), which the controller answers without "
            "the device: not 0 (OK) or 2 (TRANS_ERR)"
        )
    if tx is not None and len(tx) != length:
        raise ValueError(f"{where}: 'len' {length} and 'tx' has {len(tx)} bytes")
    if tx is None and rx is None and length:
        raise ValueError(f"{where}: 'len' {length} with neither 'tx' nor 'rx'")
    if rx is not None:
        if result == VIRTIO_SPI_TRANS_OK and len(rx) != length:
            raise ValueError(f"{where}: 'len' {length} and 'rx' has {len(rx)} bytes")
        if result != VIRTIO_SPI_TRANS_OK and rx:
            raise ValueError(f"{where}: a failed transfer has {len(rx)} 'rx' bytes, not none")
    return result == VIRTIO_SPI_TRANS_OK


def _normalise(kind: str, fields: dict[str, Any]) -> None:
    """Bytes-like message data to bytes, and a marker's missing detail to None (writer side)."""
    if kind == "i2c" and isinstance(fields.get("msgs"), (list, tuple)):
        given = fields["msgs"]
        if type(given) is list and all(
            type(m) is dict and type(m.get("data")) is bytes for m in given
        ):
            return
        msgs = []
        for msg in given:
            if isinstance(msg, Mapping) and isinstance(msg.get("data"), (bytearray, memoryview)):
                msg = {**msg, "data": bytes(msg["data"])}
            elif isinstance(msg, Mapping) and not isinstance(msg, dict):
                msg = dict(msg)
            msgs.append(msg)
        fields["msgs"] = msgs
    elif kind == "spi" and isinstance(fields.get("xfers"), (list, tuple)):
        fields["xfers"] = [
            {
                k: bytes(v) if k in ("tx", "rx") and isinstance(v, (bytearray, memoryview)) else v
                for k, v in xfer.items()
            }
            if isinstance(xfer, Mapping)
            else xfer
            for xfer in fields["xfers"]
        ]
    elif kind == "marker":
        fields.setdefault("detail", None)


def _pack(obj: object) -> bytes:
    data: bytes = msgpack.packb(obj, use_bin_type=True)
    return data


class TraceWriter:
    """Writes a trace as events happen; safe to call from several threads.

    The header is written and flushed at once. `event()` assigns the next seq
    and the host's `time.monotonic_ns()`, checks the event against the schema
    (ValueError if it does not fit; `validate=False` skips that for a writer
    whose events are right by construction, the reader checks them anyway) and
    writes it. After every `flush_every` events (0: only on `flush()` and
    `close()`), or on the first event `flush_after` seconds after the last
    flush, the data so far reaches the file as a whole lz4 block, so that the
    file is a readable prefix. Use as a context manager, or call `close()`, to
    end the frame.

    A write the file system refuses (ENOSPC: it is full) raises TraceWriteError, one
    line naming the file and the file system; the writer is then done: its file is
    closed as it is, the same error is raised by every later call but `close()`, and
    it is kept in `write_failures()`.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        header: Header,
        flush_every: int = 1,
        flush_after: float | None = None,
        validate: bool = True,
        simulated_time: Callable[[], int] | None = None,
    ) -> None:
        if flush_every < 0:
            raise ValueError(f"flush_every must be 0 or more, not {flush_every}")
        self.path = Path(path)
        self.header = header
        self.schema = schema_for(header.bus)
        self.flush_every = flush_every
        self.flush_after_ns = None if flush_after is None else int(flush_after * 1e9)
        self.validate = validate
        # Under simulated time, every event also gets the guest's time ("sim", ns).
        self.simulated_time = simulated_time
        self._flushed_at = time.monotonic_ns()
        self._lock = threading.Lock()
        self._seq = 0
        self._unflushed = 0
        self._ctx = lz4.frame.create_compression_context()
        self.failure: TraceWriteError | None = None
        head = _pack(header.to_map())
        try:
            self._file: BinaryIO | None = open(self.path, "wb")
        except OSError as err:
            self._file = None
            raise self._failed(err) from None
        try:
            self._file.write(
                lz4.frame.compress_begin(
                    self._ctx,
                    compression_level=COMPRESSION_LEVEL,
                    block_size=lz4.frame.BLOCKSIZE_MAX64KB,
                    block_linked=True,
                    content_checksum=True,
                    block_checksum=BLOCK_CHECKSUMS,
                    auto_flush=False,
                )
            )
            self._file.write(lz4.frame.compress_chunk(self._ctx, head))
            self._flush_locked()
        except BaseException:
            if self._file is not None:
                self._file.close()
                self._file = None
            raise

    @property
    def events(self) -> int:
        """How many events were written so far (the next event's seq)."""
        return self._seq

    @property
    def closed(self) -> bool:
        return self._file is None

    def event(self, kind: str, **fields: Any) -> int:
        """Record one event of `kind` with its kind's fields; returns its seq."""
        if "seq" in fields or "t" in fields:
            raise ValueError("the writer assigns 'seq' and 't'")
        _normalise(kind, fields)
        if self.simulated_time is not None:
            fields["sim"] = self.simulated_time()
        with self._lock:
            return self._append_locked(kind, fields, time.monotonic_ns())

    def _append_locked(self, kind: str, fields: Mapping[str, Any], t: int) -> int:
        if self._file is None:
            if self.failure is not None:
                raise self.failure
            raise ValueError(f"{self.path}: the trace writer is closed")
        seq = self._seq
        event = {"seq": seq, "t": t, "kind": kind, **fields}
        if self.validate:
            validate_event(event, seq, self.schema)
        try:
            self._file.write(lz4.frame.compress_chunk(self._ctx, _pack(event)))
        except OSError as err:
            raise self._failed(err) from None
        self._seq = seq + 1
        self._unflushed += 1
        if (self.flush_every and self._unflushed >= self.flush_every) or (
            self.flush_after_ns is not None and t - self._flushed_at >= self.flush_after_ns
        ):
            self._flush_locked()
        return seq

    def flush(self) -> None:
        """Put every event so far in the file (as an lz4 block), readable by another process."""
        with self._lock:
            if self.failure is not None:
                raise self.failure
            if self._file is not None:
                self._flush_locked()

    def _flush_locked(self) -> None:
        assert self._file is not None
        try:
            self._file.write(lz4.frame.compress_flush(self._ctx, end_frame=False))
            self._file.flush()
        except OSError as err:
            raise self._failed(err) from None
        self._unflushed = 0
        self._flushed_at = time.monotonic_ns()

    def _failed(self, err: OSError) -> TraceWriteError:
        """The writer is done: its file closed as it is (what is buffered is dropped, it
        would only fail again), the failure kept and returned to raise."""
        file, self._file = self._file, None
        if file is not None:
            try:
                file.close()
            except OSError:
                pass  # the buffer's flush failed again; the descriptor is closed
        self.failure = TraceWriteError(self.path, err)
        _write_failures.append(self.failure)
        return self.failure

    def close(self) -> None:
        """End the frame (its end mark and content checksum) and close the file."""
        with self._lock:
            if self._file is None:
                return
            try:
                self._file.write(lz4.frame.compress_flush(self._ctx, end_frame=True))
                self._file.flush()
            except OSError as err:
                raise self._failed(err) from None
            file, self._file = self._file, None
            try:
                file.close()
            except OSError as err:
                raise self._failed(err) from None

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def write_trace_atomic(
    path: str | os.PathLike[str], header: Header, events: Iterable[Mapping[str, Any]]
) -> None:
    """Write a whole trace so that `path` is either the old file or the complete new one.

    Each event is a map with "kind" and its fields; "seq" is renumbered from 0
    (so a filtered list of events makes a valid trace) and "t" kept when the
    event has it (else now). An event that does not fit the schema raises
    ValueError and leaves `path` untouched. The data is written to a temporary
    file in the same directory, fsynced, and renamed over `path`.
    """
    with replacing(Path(path)) as tmp, TraceWriter(tmp, header, flush_every=0) as writer:
        for event in events:
            fields = {k: v for k, v in event.items() if k not in ("seq", "t", "kind")}
            kind = event.get("kind")
            if type(kind) is not str:
                raise ValueError(f"event {writer.events}: 'kind' must be a str, not {kind!r}")
            t = event.get("t")
            if t is None:
                t = time.monotonic_ns()
            _normalise(kind, fields)
            with writer._lock:
                writer._append_locked(kind, fields, t)


class _Truncated(Exception):
    """The file ends before its lz4 frame does: at file byte `offset`."""

    def __init__(self, offset: int, what: str) -> None:
        super().__init__(what)
        self.offset = offset
        self.what = what


def _open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """The file for reading; TraceError unless it is a regular file (a FIFO would block)."""
    try:
        # O_NONBLOCK: opening a FIFO does not wait for a writer; O_NOCTTY: a tty stays ours.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise TraceError(path, None, "no such file") from None
    except OSError as err:
        raise TraceError(path, None, f"cannot open: {err.strerror or err}") from None
    except ValueError:  # a NUL in the name
        raise TraceError(path, None, "cannot open: the name has a NUL byte") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO, device or socket"
            raise TraceError(path, None, f"not a regular file ({kind})")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


class TraceReader(Iterator[dict[str, Any]]):
    """Streams a trace's events; `header` is read when the reader is made.

    Iterating yields each event map, checked against the schema. The file is
    closed when the events run out, on an error, by `close()` or at the end of
    a `with` block. See `read_trace` for `strict`.
    """

    def __init__(self, path: str | os.PathLike[str], strict: bool = True) -> None:
        self.path = str(path)
        self.strict = strict
        self._file: BinaryIO | None = _open_regular(path)
        self._pos = 0  # file offset of the next byte to read
        self._blocks: list[tuple[int, int]] = []  # (stream offset, file offset) of recent blocks
        self._fed = 0  # decompressed bytes fed to the unpacker
        self._unpacker = msgpack.Unpacker(
            raw=False,
            strict_map_key=False,
            max_buffer_size=_MAX_BUFFER,
            max_str_len=MAX_EVENT_BYTES,
            max_bin_len=MAX_EVENT_BYTES,
            max_array_len=_MAX_CONTAINER,
            max_map_len=_MAX_CONTAINER,
            max_ext_len=MAX_EVENT_BYTES,
        )
        self._decompressor = lz4.frame.LZ4FrameDecompressor()
        self._chunks = self._frame()
        self._done = False
        self.events = 0  # events returned so far (the next event's seq)
        try:
            obj, start = self._next_object(header=True)
            try:
                self.header = Header.from_map(obj)
            except (ValueError, TypeError) as err:  # TypeError: a check that missed a type
                raise self._stream_error(start, str(err)) from None
        except BaseException:
            self.close()
            raise

    # The lz4 frame, block by block

    def _read(self, n: int) -> bytes:
        assert self._file is not None
        try:
            data = self._file.read(n)
        except OSError as err:
            raise TraceError(self.path, self._pos, f"cannot read: {err.strerror or err}") from None
        self._pos += len(data)
        return data

    def _error(self, offset: int, what: str, seq: int | None = None) -> TraceError:
        return TraceError(self.path, offset, what, seq=seq)

    def _decompress(self, offset: int, data: bytes, what: str, limit: int = 1 << 16) -> bytes:
        # With no max_length (python-lz4 4.4), decompress() keeps part of a linked
        # block's output back until a later call: an output buffer of a whole
        # block gets all of it, so every flushed event is readable at once.
        decompressor = self._decompressor
        try:
            out: bytes = decompressor.decompress(data, max_length=limit)
            while not decompressor.needs_input and not decompressor.eof:
                out += decompressor.decompress(b"", max_length=limit)
        except RuntimeError as err:
            code = str(err).rsplit(" ", 1)[-1]
            raise self._error(offset, f"corrupt {what} ({code})") from None
        return out

    def _frame(self) -> Iterator[tuple[int, bytes]]:
        """Yield (file offset of the block, its decompressed bytes); _Truncated if cut off."""
        magic = self._read(4)
        if not magic:
            raise self._error(0, "empty file")
        if magic != _LZ4_MAGIC:
            if len(magic) < 4 and _LZ4_MAGIC.startswith(magic):
                raise _Truncated(self._pos, "the file ends inside the lz4 frame header")
            raise self._error(0, "not an lz4 frame: is this a roadtest trace?")
        descriptor = self._read(2)
        if len(descriptor) < 2:
            raise _Truncated(self._pos, "the file ends inside the lz4 frame header")
        flg, bd = descriptor
        block_max = _LZ4_BLOCK_MAX.get((bd >> 4) & 7)
        if flg >> 6 != 1 or flg & 0b10 or bd & 0x8F or block_max is None:
            raise self._error(4, "corrupt lz4 frame header (unknown version or flags)")
        block_checksum = bool(flg & 0x10)
        content_checksum = bool(flg & 0x04)
        rest = self._read((8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0) + 1)
        if len(rest) < (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0) + 1:
            raise _Truncated(self._pos, "the file ends inside the lz4 frame header")
        self._decompress(0, magic + descriptor + rest, "lz4 frame header")
        while True:
            start = self._pos
            word = self._read(4)
            if not word:
                raise _Truncated(
                    start, "truncated: the lz4 frame has no end (the writer did not finish)"
                )
            if len(word) < 4:
                raise _Truncated(self._pos, f"truncated inside the lz4 block at byte {start}")
            size = int.from_bytes(word, "little")
            if size == 0:  # the end mark
                tail = self._read(4) if content_checksum else b""
                if content_checksum and len(tail) < 4:
                    raise _Truncated(self._pos, "truncated inside the lz4 frame's checksum")
                out = self._decompress(start, word + tail, "lz4 frame end")
                if not self._decompressor.eof:
                    raise self._error(start, "corrupt lz4 frame: no end after its end mark")
                if out:
                    yield start, out
                if self._read(1):
                    raise self._error(self._pos - 1, "trailing bytes after the lz4 frame")
                return
            length = size & 0x7FFFFFFF
            if length > block_max:
                raise self._error(
                    start,
                    f"corrupt lz4 block: {length} bytes, more than the frame's {block_max}",
                )
            body = self._read(length + (4 if block_checksum else 0))
            if len(body) < length + (4 if block_checksum else 0):
                raise _Truncated(self._pos, f"truncated inside the lz4 block at byte {start}")
            out = self._decompress(start, word + body, "lz4 block", block_max)
            if out:
                yield start, out

    # msgpack objects in the decompressed stream

    def _stream_error(self, start: int, what: str, seq: int | None = None) -> TraceError:
        block = next((f for s, f in reversed(self._blocks) if s <= start), None)
        where = f" (in the lz4 block at file byte {block})" if block is not None else ""
        return TraceError(self.path, start, f"{what}{where}", in_stream=True, seq=seq)

    def _next_object(self, header: bool = False) -> tuple[object, int]:
        """The next object and its stream offset; StopIteration at the (allowed) end."""
        while True:
            start = self._unpacker.tell()
            try:
                obj = self._unpacker.unpack()
            except msgpack.OutOfData:
                pass
            except Exception as err:  # msgpack has many ways to refuse garbage
                what = f"{_type_name(err)}: {err}" if str(err) else _type_name(err)
                raise self._stream_error(
                    start, f"{self._which(header)}: not msgpack: {what}", self._seq(header)
                ) from None
            else:
                while len(self._blocks) > 1 and self._blocks[1][0] <= start:
                    del self._blocks[0]
                return obj, start
            try:
                block, data = next(self._chunks)
            except StopIteration:
                left = self._fed - start
                if header and not left:
                    raise self._stream_error(start, "no header: the lz4 frame is empty") from None
                if header or left:
                    raise self._stream_error(
                        start,
                        f"{self._which(header)}: the stream ends inside it ({left} bytes)",
                        self._seq(header),
                    ) from None
                raise
            except _Truncated as cut:
                if header:
                    raise self._error(
                        cut.offset, f"{cut.what}, before the end of the header"
                    ) from None
                if not self.strict:
                    raise StopIteration from None
                raise self._error(
                    cut.offset,
                    f"{cut.what}; {self.events} complete events before it",
                    self.events,
                ) from None
            self._blocks.append((self._fed, block))
            self._fed += len(data)
            try:
                self._unpacker.feed(data)
            except Exception as err:  # BufferFull: an object bigger than anything we write
                raise self._stream_error(
                    start, f"{self._which(header)}: too big to read ({err})", self._seq(header)
                ) from None

    def _which(self, header: bool) -> str:
        return "the header" if header else f"event seq {self.events}"

    def _seq(self, header: bool) -> int | None:
        return None if header else self.events

    def __iter__(self) -> TraceReader:
        return self

    def __next__(self) -> dict[str, Any]:
        if self._done:
            raise StopIteration
        try:
            obj, start = self._next_object()
            if not isinstance(obj, dict):
                raise self._stream_error(
                    start,
                    f"event seq {self.events}: a msgpack {_type_name(obj)}, not a map",
                    self.events,
                )
            try:
                validate_event(obj, self.events, self.header.schema)
            except (ValueError, TypeError) as err:  # TypeError: a check that missed a type
                raise self._stream_error(start, str(err), self.events) from None
        except BaseException:
            self.close()
            raise
        self.events += 1
        return obj

    def close(self) -> None:
        self._done = True
        file, self._file = getattr(self, "_file", None), None
        if file is not None:
            file.close()

    def __del__(self) -> None:
        self.close()

    def __enter__(self) -> TraceReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def read_trace(
    path: str | os.PathLike[str], strict: bool = True
) -> tuple[Header, Iterator[dict[str, Any]]]:
    """The trace's header (read now) and an iterator over its events (read as it goes).

    Every problem is a `TraceError`: the header's at once, an event's when the
    iteration reaches it (the events before it have been returned). A file
    that ends early (a crashed or killed writer) is an error at the point of
    truncation when `strict`; with strict=False the events stop quietly after
    the last complete one. Corruption is an error either way.
    """
    reader = TraceReader(path, strict=strict)
    return reader.header, reader


def read_header(path: str | os.PathLike[str]) -> Header:
    """The trace's header alone (TraceError if it cannot be read)."""
    with TraceReader(path) as reader:
        return reader.header


def load_trace(
    path: str | os.PathLike[str], strict: bool = True
) -> tuple[Header, list[dict[str, Any]]]:
    """`read_trace`, with every event read into a list."""
    header, events = read_trace(path, strict=strict)
    return header, list(events)
