"""The trace format: writing, streaming reads, truncation, corruption and schema checks."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import lz4.frame
import msgpack
import pytest

from roadtest.errors import RoadtestError
from roadtest.trace.format import (
    FORMAT,
    SCHEMA_VERSION,
    Header,
    TraceError,
    TraceWriter,
    load_trace,
    read_trace,
    validate_event,
    write_trace_atomic,
)


def header(**changes: Any) -> Header:
    fields: dict[str, Any] = {
        "kernel": "6.12.57",
        "test": "tests/drivers/regulator/test_tps6286x.py::test_enable",
        "address": 0x48,
        "compatible": "ti,tps62864",
        "model": "roadtest.models.tps6286x:TPS6286x",
        "regbytes": 1,
        **changes,
    }
    return Header(**fields)


def read_reg(reg: int, value: bytes, status: int = 0) -> list[dict[str, Any]]:
    return [
        {"flags": 1, "len": 1, "data": bytes([reg]), "status": status},
        {"flags": 2, "len": len(value), "data": b"" if status else value, "status": status},
    ]


def write_reg(*data: int, status: int = 0) -> list[dict[str, Any]]:
    return [{"flags": 0, "len": len(data), "data": bytes(data), "status": status}]


SAMPLE: list[tuple[str, dict[str, Any]]] = [
    ("marker", {"what": "bind", "detail": None}),
    ("i2c", {"msgs": read_reg(0x03, b"\x6b")}),
    ("i2c", {"msgs": write_reg(0x03, 0x20)}),
    ("gpio", {"line": 5, "name": "irq", "op": "irq_type", "value": 8, "status": 0}),
    ("gpio", {"line": 5, "name": "irq", "op": "unmask", "value": 0, "status": 0}),
    ("irq", {"line": 5, "name": "irq", "level": 0}),
    ("i2c", {"msgs": read_reg(0x07, b"\x00", status=1)}),
    ("marker", {"what": "inject", "detail": {"attr": "status", "value": 4}}),
    ("marker", {"what": "unbind", "detail": None}),
]


def write_sample(path: Path, flush_every: int = 1) -> list[dict[str, Any]]:
    with TraceWriter(path, header(), flush_every=flush_every) as writer:
        for kind, fields in SAMPLE:
            writer.event(kind, **fields)
    return [{"seq": i, "kind": k, **f} for i, (k, f) in enumerate(SAMPLE)]


def without_t(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if k != "t"} for e in events]


def raw_trace(path: Path, *objects: object) -> Path:
    """A file of lz4.frame.compress(msgpack objects), written by hand."""
    data = b"".join(msgpack.packb(o, use_bin_type=True) for o in objects)
    path.write_bytes(lz4.frame.compress(data))
    return path


def read_error(path: Path, strict: bool = True) -> TraceError:
    with pytest.raises(TraceError) as info:
        _, events = read_trace(path, strict=strict)
        list(events)
    return info.value


# Round trips


def test_round_trip_keeps_the_header_and_every_event(tmp_path: Path) -> None:
    path = tmp_path / "t.rtrace"
    expected = write_sample(path)
    got_header, events = read_trace(path)
    assert got_header == header(created=got_header.created)
    assert got_header.model == "roadtest.models.tps6286x:TPS6286x"
    assert not isinstance(events, list)  # streamed
    got = list(events)
    assert without_t(got) == expected
    times = [e["t"] for e in got]
    assert times == sorted(times) and all(type(t) is int for t in times)


def test_the_file_is_one_standard_lz4_frame_of_msgpack(tmp_path: Path) -> None:
    path = tmp_path / "t.rtrace"
    write_sample(path)
    unpacker = msgpack.Unpacker(raw=False)
    unpacker.feed(lz4.frame.decompress(path.read_bytes()))
    first, *events = list(unpacker)
    # An I2C trace keeps schema 1, which a roadtest from before SPI reads.
    assert first["format"] == FORMAT and first["schema"] == 1 < SCHEMA_VERSION
    assert first["bus"] == "i2c" and first["address"] == 0x48 and first["byteorder"] == "little"
    assert [e["seq"] for e in events] == list(range(len(SAMPLE)))


def test_unknown_header_keys_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "t.rtrace"
    with TraceWriter(path, header(extra={"device": "SENSOR", "future": [1, 2]})):
        pass
    got, events = read_trace(path)
    assert got.extra == {"device": "SENSOR", "future": [1, 2]}
    assert list(events) == []
    assert got.to_map()["device"] == "SENSOR"


def test_the_writer_takes_bytes_like_data_and_fills_a_markers_detail(tmp_path: Path) -> None:
    path = tmp_path / "t.rtrace"
    with TraceWriter(path, header()) as writer:
        msgs = [{"flags": 0, "len": 2, "data": bytearray(b"\x03\x20"), "status": 0}]
        assert writer.event("i2c", msgs=msgs) == 0
        assert writer.event("marker", what="bind") == 1
        assert writer.events == 2
    _, events = load_trace(path)
    assert events[0]["msgs"][0]["data"] == b"\x03\x20"
    assert events[1]["detail"] is None


def test_the_writer_refuses_events_outside_the_schema(tmp_path: Path) -> None:
    with TraceWriter(tmp_path / "t.rtrace", header()) as writer:
        with pytest.raises(ValueError, match="unknown kind"):
            writer.event("spmi", data=b"")
        # An I2C device's trace is schema 1, which has no SPI events.
        with pytest.raises(ValueError, match="the 'spi' kind is schema 2's, and this trace is"):
            writer.event("spi", cs=0, xfers=[])
        with pytest.raises(ValueError, match="assigns"):
            writer.event("irq", seq=3, line=1, name="irq", level=0)
        with pytest.raises(ValueError, match="'len' 3 has 2 data bytes"):
            writer.event("i2c", msgs=[{"flags": 0, "len": 3, "data": b"\x01\x02", "status": 0}])
        with pytest.raises(ValueError, match="unknown op"):
            writer.event("gpio", line=1, name="irq", op="toggle", value=0, status=0)
        with pytest.raises(ValueError, match="'level' must be an int"):
            writer.event("irq", line=1, name="irq", level=True)
        writer.event("irq", line=1, name="irq", level=1)
    _, events = load_trace(tmp_path / "t.rtrace")
    assert [e["seq"] for e in events] == [0]  # the refused ones used no seq
    with pytest.raises(ValueError, match="closed"):
        writer.event("irq", line=1, name="irq", level=1)


def test_events_from_several_threads_get_consecutive_seqs(tmp_path: Path) -> None:
    path = tmp_path / "t.rtrace"
    with TraceWriter(path, header(), flush_every=7) as writer:

        def record(line: int) -> None:
            for value in range(200):
                writer.event("gpio", line=line, name="x", op="set_value", value=value, status=0)

        threads = [threading.Thread(target=record, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    _, events = load_trace(path)
    assert [e["seq"] for e in events] == list(range(800))
    for line in range(4):
        assert [e["value"] for e in events if e["line"] == line] == list(range(200))
    times = [e["t"] for e in events]
    assert times == sorted(times)


# Flushing, truncation and crashed writers


@pytest.mark.parametrize("flush_every", [1, 3])
def test_every_flush_leaves_a_readable_prefix(tmp_path: Path, flush_every: int) -> None:
    path, copy = tmp_path / "t.rtrace", tmp_path / "copy.rtrace"
    with TraceWriter(path, header(), flush_every=flush_every) as writer:
        for n, (kind, fields) in enumerate(SAMPLE, start=1):
            writer.event(kind, **fields)
            shutil.copyfile(path, copy)  # what another process sees now
            _, events = read_trace(copy, strict=False)
            flushed = n - n % flush_every
            assert [e["seq"] for e in events] == list(range(flushed))
            error = read_error(copy)
            assert "truncated" in error.what and error.offset == copy.stat().st_size
    assert len(load_trace(path)[1]) == len(SAMPLE)


def test_flush_makes_the_events_so_far_readable(tmp_path: Path) -> None:
    path, copy = tmp_path / "t.rtrace", tmp_path / "copy.rtrace"
    with TraceWriter(path, header(), flush_every=0) as writer:
        writer.event("marker", what="note", detail="one")
        shutil.copyfile(path, copy)
        assert list(read_trace(copy, strict=False)[1]) == []  # the header only
        writer.flush()
        shutil.copyfile(path, copy)
        assert [e["detail"] for e in read_trace(copy, strict=False)[1]] == ["one"]


def test_flush_after_flushes_on_the_first_event_that_late(tmp_path: Path) -> None:
    path, copy = tmp_path / "t.rtrace", tmp_path / "copy.rtrace"
    with TraceWriter(path, header(), flush_every=0, flush_after=0.0) as writer:
        writer.event("marker", what="note", detail="one")
        shutil.copyfile(path, copy)
        assert [e["detail"] for e in read_trace(copy, strict=False)[1]] == ["one"]
    with TraceWriter(path, header(), flush_every=0, flush_after=3600.0) as writer:
        writer.event("marker", what="note", detail="one")
        shutil.copyfile(path, copy)
        assert list(read_trace(copy, strict=False)[1]) == []


def test_an_unvalidated_writer_still_meets_a_validating_reader(tmp_path: Path) -> None:
    path = tmp_path / "t.rtrace"
    with TraceWriter(path, header(), validate=False) as writer:
        writer.event("gpio", line=-1, name="irq", op="unmask", value=0, status=0)
    assert "line" in str(read_error(path))


def test_a_cut_at_any_byte_reads_a_prefix_or_fails_at_the_cut(tmp_path: Path) -> None:
    path, cut = tmp_path / "t.rtrace", tmp_path / "cut.rtrace"
    expected = write_sample(path)
    data = path.read_bytes()
    lengths = set()
    for size in range(len(data)):
        cut.write_bytes(data[:size])
        error = read_error(cut)
        assert error.offset == size and not error.in_stream, error
        try:
            _, events = read_trace(cut, strict=False)
        except TraceError as err:
            assert "header" in str(err) or "empty" in str(err)  # nothing to salvage
            continue
        got = without_t(list(events))
        assert got == expected[: len(got)]
        lengths.add(len(got))
    assert lengths == set(range(len(SAMPLE) + 1))  # each flushed event shows up at its block


def test_a_writer_killed_with_sigkill_leaves_every_flushed_event(tmp_path: Path) -> None:
    path = tmp_path / "killed.rtrace"
    script = textwrap.dedent(
        f"""
        import sys, time
        from roadtest.trace.format import Header, TraceWriter
        writer = TraceWriter({str(path)!r}, Header(kernel="k", test="t", address=0x10,
                             compatible="c"), flush_every=int(sys.argv[1]))
        for i in range(100):
            writer.event("marker", what="note", detail=i)
        print("ready", flush=True)
        time.sleep(60)
        """
    )
    for flush_every, flushed in ((1, 100), (64, 64)):
        proc = subprocess.Popen(
            [sys.executable, "-c", script, str(flush_every)], stdout=subprocess.PIPE, text=True
        )
        try:
            assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        _, events = read_trace(path, strict=False)
        assert [e["detail"] for e in events] == list(range(flushed))
        error = read_error(path)
        assert "truncated" in str(error) and f"{flushed} complete events" in str(error)
        assert error.seq == flushed


def test_reading_streams_instead_of_loading_the_file(tmp_path: Path) -> None:
    path = tmp_path / "big.rtrace"
    with TraceWriter(path, header()) as writer:
        for i in range(5000):
            writer.event("i2c", msgs=write_reg(0x01, i & 0xFF))
    _, events = read_trace(path)
    assert next(events)["seq"] == 0
    reader_file = events._file  # type: ignore[attr-defined]
    assert reader_file.tell() < path.stat().st_size // 20
    assert sum(1 for _ in events) == 4999
    assert reader_file.closed  # closed when the events ran out


# Atomic writes


def test_write_trace_atomic_renumbers_keeps_times_and_replaces(tmp_path: Path) -> None:
    path = tmp_path / "golden.rtrace"
    path.write_bytes(b"old")
    events = [
        {"seq": 7, "t": 1000, "kind": "i2c", "msgs": write_reg(0x03, 0x20)},
        {"seq": 9, "t": 2000, "kind": "marker", "what": "unbind", "detail": None},
        {"kind": "irq", "line": 1, "name": "irq", "level": 1},
    ]
    write_trace_atomic(path, header(), events)
    _, got = load_trace(path)
    assert [e["seq"] for e in got] == [0, 1, 2]
    assert [e["t"] for e in got[:2]] == [1000, 2000] and got[2]["t"] > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["golden.rtrace"]
    umask = os.umask(0o022)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


def test_write_trace_atomic_leaves_the_old_file_when_an_event_is_bad(tmp_path: Path) -> None:
    path = tmp_path / "golden.rtrace"
    write_sample(path)
    before = path.read_bytes()
    bad: list[dict[str, object]] = [
        {"kind": "i2c", "msgs": write_reg(0x01, 2)},
        {"kind": "i2c", "msgs": []},
    ]
    with pytest.raises(ValueError, match="event seq 1 .i2c.: 'msgs' must be a non-empty list"):
        write_trace_atomic(path, header(), bad)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["golden.rtrace"]


# What the reader refuses


def test_trace_error_is_a_one_line_roadtest_error(tmp_path: Path) -> None:
    error = read_error(tmp_path / "missing.rtrace")
    assert isinstance(error, RoadtestError)
    assert str(error) == f"{tmp_path / 'missing.rtrace'}: no such file"
    assert error.offset is None
    assert str(TraceError("a.rtrace", 12, "bad")) == "a.rtrace: byte 12: bad"
    stream = TraceError("a.rtrace", 12, "bad", in_stream=True, seq=3)
    assert str(stream) == "a.rtrace: byte 12 of the decompressed stream: bad" and stream.seq == 3


def test_files_that_are_not_traces(tmp_path: Path) -> None:
    empty = tmp_path / "empty.rtrace"
    empty.write_bytes(b"")
    assert str(read_error(empty)).endswith("byte 0: empty file")
    text = tmp_path / "text.rtrace"
    text.write_text("hello, world\n")
    assert "not an lz4 frame: is this a roadtest trace?" in str(read_error(text))
    assert "not a regular file (a directory)" in str(read_error(tmp_path))
    other = raw_trace(tmp_path / "other.rtrace", {"format": "pcap"})
    assert "not a roadtest trace: format is 'pcap'" in str(read_error(other))
    numbers = raw_trace(tmp_path / "numbers.rtrace", 1, 2, 3)
    assert "not a roadtest trace: it starts with a msgpack int" in str(read_error(numbers))
    nothing = tmp_path / "nothing.rtrace"
    nothing.write_bytes(lz4.frame.compress(b""))
    assert "no header" in str(read_error(nothing, strict=False))


def test_a_newer_schema_is_refused_and_missing_header_keys_named(tmp_path: Path) -> None:
    newer = raw_trace(tmp_path / "newer.rtrace", {**header().to_map(), "schema": 3})
    assert "schema 3 is newer than this roadtest supports (2)" in str(read_error(newer))
    incomplete = {k: v for k, v in header().to_map().items() if k != "compatible"}
    assert "header: missing 'compatible'" in str(
        read_error(raw_trace(tmp_path / "h.rtrace", incomplete))
    )
    wrong = {**header().to_map(), "address": "0x48"}
    assert "'address' must be an int, not str" in str(
        read_error(raw_trace(tmp_path / "w.rtrace", wrong))
    )


def event(seq: int, **fields: Any) -> dict[str, Any]:
    return {"seq": seq, "t": 1000 + seq, **fields}


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (event(2, kind="marker", what="x", detail=None), "event seq 2: seq is not consecutive"),
        (event(0, kind="spmi"), "event seq 0 (spmi): unknown kind"),
        (event(0, kind="spi"), "event seq 0 (spi): the 'spi' kind is schema 2's, and this"),
        (event(0, kind="irq", line=1, name="irq"), "event seq 0 (irq): missing 'level'"),
        ({"seq": 0, "kind": "marker", "what": "x", "detail": 1}, "event seq 0: missing 't'"),
        # An event without seq, after a good one; and an I2C one (the quick check).
        ({"t": 1, "kind": "marker", "what": "x", "detail": 1}, "event seq 1: missing 'seq'"),
        (
            {"t": 1, "kind": "i2c", "msgs": write_reg(1)},
            "event seq 1: missing 'seq'",
        ),
        (event(0, kind="marker", what="x", detail=1, sim=-1), "'sim' is -1, not >= 0"),
        (event(0, kind="marker", what="x", detail=1, sim=1.5), "'sim' must be an int"),
        (event(0, kind="i2c", msgs="01"), "'msgs' must be a non-empty list"),
        (
            event(0, kind="i2c", msgs=[{"flags": 2, "len": 1, "data": "x", "status": 0}]),
            "event seq 0 (i2c): msgs[0]: 'data' must be bytes, not str",
        ),
        (
            event(0, kind="i2c", msgs=[{"flags": 2, "len": 2, "data": b"\0", "status": 0}]),
            "a read of 'len' 2 returned 1 bytes",
        ),
        (
            event(0, kind="i2c", msgs=[{"flags": 0, "len": 0, "data": b"", "status": 5}]),
            "'status' is 5",
        ),
        (event(0, kind="gpio", line=1, name="irq", op="unmask", value=0), "missing 'status'"),
        # A message's length is struct i2c_msg's __u16 (include/uapi/linux/i2c.h), which
        # is what virtio-i2c's driver sends; a read that failed has no data to check it by.
        (
            event(0, kind="i2c", msgs=[{"flags": 2, "len": 2**62, "data": b"", "status": 1}]),
            "event seq 0 (i2c): msgs[0]: 'len' is 4611686018427387904, not 0..65535",
        ),
        (
            event(0, kind="i2c", msgs=[{"flags": 2, "len": 0x10000, "data": b"", "status": 1}]),
            "'len' is 65536, not 0..65535",
        ),
        # A virtio-gpio line number is a __le16 (struct virtio_gpio_request).
        (event(0, kind="irq", line=0x10000, name="irq", level=1), "'line' is 65536, not 0..65535"),
        ([1, 2], "event seq 0: a msgpack list, not a map"),
    ],
)
def test_events_outside_the_schema_are_errors_naming_the_seq(
    tmp_path: Path, bad: object, message: str
) -> None:
    good = event(0, kind="marker", what="bind", detail=None)
    events = [bad] if not isinstance(bad, dict) or bad.get("seq") == 0 else [good, bad]
    path = raw_trace(tmp_path / "bad.rtrace", header().to_map(), *events)
    error = read_error(path)
    assert message in str(error)
    assert error.in_stream and "of the decompressed stream" in str(error)
    assert "\n" not in str(error)  # one line
    assert error.seq == len(events) - 1
    # Corruption is an error when salvaging too.
    assert message in str(read_error(path, strict=False))


@pytest.mark.parametrize(
    ("stream", "message"),
    [
        (b"\x81\x91\x01\x02", "not msgpack: TypeError"),  # a map keyed by a list
        (b"\x91" * 2000, "not msgpack: StackError"),  # nested too deep
        (b"\xc1", "not msgpack: FormatError"),  # the reserved byte
        (b"\xa2\xff\xfe", "not msgpack: UnicodeDecodeError"),
        (b"\xdd\x00\x10\x00\x00", "not msgpack: ValueError"),  # 2**20 items: over the limit
        (b"\xc6\x7f\xff\xff\xff", "the stream ends inside it"),  # 2 GiB of bin: never read
    ],
)
def test_malformed_msgpack_is_an_error_naming_the_event(
    tmp_path: Path, stream: bytes, message: str
) -> None:
    path = tmp_path / "bad.rtrace"
    head = msgpack.packb(header().to_map())
    path.write_bytes(lz4.frame.compress(head + stream))
    error = read_error(path)
    assert message in str(error) and "event seq 0" in str(error), error
    assert error.offset == len(head) and error.in_stream


def test_the_events_before_a_bad_one_are_returned_first(tmp_path: Path) -> None:
    good = [event(i, kind="marker", what="note", detail=i) for i in range(3)]
    path = raw_trace(tmp_path / "t.rtrace", header().to_map(), *good, event(3, kind="x"))
    _, events = read_trace(path)
    assert [next(events)["seq"] for _ in range(3)] == [0, 1, 2]
    with pytest.raises(TraceError, match="event seq 3"):
        next(events)


def test_corrupt_frames_are_errors_at_the_block(tmp_path: Path) -> None:
    path = tmp_path / "t.rtrace"
    write_sample(path)
    data = path.read_bytes()
    damaged = tmp_path / "damaged.rtrace"
    # A flipped bit in the last event's block fails that block's checksum (at its file offset).
    flipped = bytearray(data)
    flipped[-12] ^= 0x10
    damaged.write_bytes(bytes(flipped))
    error = read_error(damaged)
    assert "corrupt lz4 block" in error.what and not error.in_stream
    assert error.offset is not None and 0 < error.offset < len(data) - 12
    # The offset is said once ("byte N: corrupt lz4 block at byte N" said it twice).
    assert str(error).count(f"byte {error.offset}") == 1, str(error)
    _, events = read_trace(damaged, strict=False)
    with pytest.raises(TraceError, match="corrupt"):
        list(events)
    # The content checksum at the end.
    flipped = bytearray(data)
    flipped[-1] ^= 0x01
    damaged.write_bytes(bytes(flipped))
    assert "ERROR_contentChecksum_invalid" in str(read_error(damaged))
    damaged.write_bytes(data + b"\0")
    assert f"byte {len(data)}: trailing bytes after the lz4 frame" in str(read_error(damaged))
    # A header claiming an impossible block size.
    flipped = bytearray(data)
    flipped[5] = 0x70 | 0x08
    damaged.write_bytes(bytes(flipped))
    assert "corrupt lz4 frame header" in str(read_error(damaged))


def test_validate_event_accepts_what_the_schema_describes() -> None:
    for seq, (kind, fields) in enumerate(SAMPLE):
        validate_event({"seq": seq, "t": 5, "kind": kind, **fields}, seq)
    with pytest.raises(ValueError, match="expected seq 4"):
        validate_event({"seq": 3, "t": 5, "kind": "irq", "line": 0, "name": "a", "level": 1}, 4)
    with pytest.raises(ValueError, match="^event: missing 'seq'$"):
        validate_event({"t": 5, "kind": "irq", "line": 0, "name": "a", "level": 1})


def test_the_longest_messages_and_highest_line_are_accepted(tmp_path: Path) -> None:
    # The bounds themselves: a __u16 length read in full or failed, the last __le16 line.
    longest = [
        {"flags": 1, "len": 0xFFFF, "data": bytes(0xFFFF), "status": 0},
        {"flags": 2, "len": 0xFFFF, "data": bytes(0xFFFF), "status": 0},
    ]
    events = [
        event(0, kind="i2c", msgs=longest),
        event(1, kind="i2c", msgs=[{"flags": 2, "len": 0xFFFF, "data": b"", "status": 1}]),
        event(2, kind="irq", line=0xFFFF, name="irq", level=1, sim=7),
    ]
    path = raw_trace(tmp_path / "t.rtrace", header().to_map(), *events)
    assert load_trace(path)[1] == events
