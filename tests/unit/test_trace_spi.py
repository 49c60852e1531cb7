"""SPI messages in traces: the `spi` event of schema 2, what the reader refuses of it (one line
each), that traces written before it still read, and how `roadtest trace show` prints it.

Expected values come from SCHEMA.md and the virtio specification's "SPI Controller Device"
section (results OK 0, PARAM_ERR 1, TRANS_ERR 2; mode bits CPHA 1, CPOL 2, CS_HIGH 4,
LSB_FIRST 8, LOOP 16; a u8 chip select), not from the reader.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lz4.frame
import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from roadtest.trace import commands
from roadtest.trace.decode import Decoder
from roadtest.trace.format import (
    Header,
    TraceError,
    TraceWriter,
    load_trace,
    read_trace,
    validate_event,
)


def header(bus: str = "spi") -> Header:
    return Header(
        kernel="6.12.57",
        test="tests/drivers/hwmon/test_tmp121.py::test_temperature[25]",
        bus=bus,
        address=2,
        compatible="ti,tmp121",
        model="roadtest.models.tmp121:TMP121",
    )


def xfer(**fields: Any) -> dict[str, Any]:
    """A successful 2-byte half-duplex read at 10 MHz, mode 0, 8-bit words, with `fields`."""
    base: dict[str, Any] = {
        "bits_per_word": 8,
        "cs_change": 0,
        "tx_nbits": 0,
        "rx_nbits": 0,
        "mode": 0,
        "freq": 10_000_000,
        "word_delay_ns": 0,
        "cs_setup_ns": 0,
        "cs_delay_hold_ns": 0,
        "cs_change_delay_inactive_ns": 0,
        "len": 2,
        "tx": None,
        "rx": b"\x0c\x87",
        "result": 0,
    }
    return {**base, **fields}


WRITE_THEN_READ = [xfer(len=1, tx=b"\x0b", rx=None), xfer()]


def raw_trace(path: Path, head: dict[str, Any], *events: object) -> Path:
    stream = b"".join(msgpack.packb(obj, use_bin_type=True) for obj in (head, *events))
    path.write_bytes(lz4.frame.compress(stream))
    return path


def event(seq: int, **fields: Any) -> dict[str, Any]:
    return {"seq": seq, "t": 1000 + seq, **fields}


def test_an_spi_trace_is_schema_2_and_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "t.rtrace"
    with TraceWriter(path, header()) as writer:
        writer.event("marker", what="bind", detail=None)
        writer.event("spi", cs=2, xfers=WRITE_THEN_READ)
        writer.event("spi", cs=2, xfers=[xfer(rx=b"", result=2)])
    unpacker = msgpack.Unpacker(raw=False)
    unpacker.feed(lz4.frame.decompress(path.read_bytes()))
    first = next(iter(unpacker))
    assert first["schema"] == 2 and first["bus"] == "spi"  # a reader from before SPI refuses it
    read, events = load_trace(path)
    assert read.schema == 2
    assert [e["kind"] for e in events] == ["marker", "spi", "spi"]
    assert events[1]["cs"] == 2 and events[1]["xfers"] == WRITE_THEN_READ
    assert events[2]["xfers"][0]["result"] == 2


def test_a_schema_1_trace_still_reads(tmp_path: Path) -> None:
    old = {**header("i2c").to_map(), "schema": 1}
    msgs = [{"flags": 0, "len": 2, "data": b"\x03\x20", "status": 0}]
    path = raw_trace(tmp_path / "old.rtrace", old, event(0, kind="i2c", msgs=msgs))
    read, events = load_trace(path)
    assert read.schema == 1 and events[0]["msgs"] == msgs


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"cs": 256, "xfers": WRITE_THEN_READ}, "'cs' is 256, not 0..255"),
        ({"cs": 0, "xfers": []}, "'xfers' must be a non-empty list"),
        ({"cs": 0}, "missing 'xfers'"),
        ({"cs": 0, "xfers": [b"\x00"]}, "xfers[0]: must be a map, not bytes"),
        ({"cs": 0, "xfers": [xfer(bits_per_word=0)]}, "'bits_per_word' is 0, not 1..32"),
        ({"cs": 0, "xfers": [xfer(bits_per_word=33)]}, "'bits_per_word' is 33, not 0..32"),
        ({"cs": 0, "xfers": [xfer(mode=0x20)]}, "'mode' is 32, not 0..31"),
        ({"cs": 0, "xfers": [xfer(tx_nbits=3)]}, "'tx_nbits' is 3, not 0, 1, 2, 4 or 8"),
        ({"cs": 0, "xfers": [xfer(cs_change=2)]}, "'cs_change' is 2, not 0..1"),
        ({"cs": 0, "xfers": [xfer(freq=2**32)]}, "'freq' is 4294967296"),
        ({"cs": 0, "xfers": [xfer(len=2**21, rx=b"")]}, "'len' is 2097152, not 0..1048576"),
        ({"cs": 0, "xfers": [xfer(tx="0b")]}, "'tx' must be bytes or nil, not str"),
        ({"cs": 0, "xfers": [xfer(tx=b"\x01")]}, "'len' 2 and 'tx' has 1 bytes"),
        ({"cs": 0, "xfers": [xfer(rx=b"\x01")]}, "'len' 2 and 'rx' has 1 bytes"),
        ({"cs": 0, "xfers": [xfer(result=2)]}, "a failed transfer has 2 'rx' bytes, not none"),
        ({"cs": 0, "xfers": [xfer(rx=b"", result=1)]}, "'result' is 1 (PARAM_ERR)"),
        ({"cs": 0, "xfers": [xfer(rx=b"", result=3)]}, "'result' is 3, not 0..2"),
        ({"cs": 0, "xfers": [xfer(rx=None)]}, "'len' 2 with neither 'tx' nor 'rx'"),
        # 16-bit words take 2 bytes each (Linux's spi_transfer, the device's refusal).
        ({"cs": 0, "xfers": [xfer(bits_per_word=16, len=3, rx=b"abc")]}, "2-byte words"),
        (
            {"cs": 0, "xfers": [xfer(rx=b"", result=2), xfer()]},
            "xfers[1] is OK after a failed transfer",
        ),
    ],
)
def test_a_damaged_spi_event_is_one_line_naming_it(
    tmp_path: Path, fields: dict[str, Any], message: str
) -> None:
    good = event(0, kind="marker", what="bind", detail=None)
    path = raw_trace(
        tmp_path / "bad.rtrace", header().to_map(), good, event(1, kind="spi", **fields)
    )
    _, events = read_trace(path)
    assert next(events)["kind"] == "marker"  # the events before the damage are returned
    with pytest.raises(TraceError) as caught:
        next(events)
    error = str(caught.value)
    assert "event seq 1 (spi): " in error and message in error
    assert "\n" not in error and caught.value.seq == 1


def test_the_writer_refuses_a_malformed_spi_event(tmp_path: Path) -> None:
    with TraceWriter(tmp_path / "t.rtrace", header()) as writer:
        with pytest.raises(ValueError, match="'len' 2 and 'rx' has 3 bytes"):
            writer.event("spi", cs=0, xfers=[xfer(rx=b"abc")])
        writer.event("spi", cs=0, xfers=[xfer(rx=bytearray(b"\x0c\x87"))])  # bytes-like
    _, events = load_trace(tmp_path / "t.rtrace")
    assert events[0]["seq"] == 0 and events[0]["xfers"][0]["rx"] == b"\x0c\x87"


VALUES = st.one_of(
    st.none(),
    st.integers(-2, 2**33),
    st.binary(max_size=6),
    st.text(max_size=3),
    st.lists(st.integers(0, 3), max_size=2),
)
XFER_KEYS = list(xfer())


@given(
    cs=VALUES,
    xfers=st.lists(
        st.dictionaries(st.sampled_from(XFER_KEYS), VALUES).map(lambda d: xfer(**d)),
        max_size=3,
    ),
)
def test_any_spi_event_is_valid_or_refused_in_one_line(cs: object, xfers: list[Any]) -> None:
    spi_event = {"seq": 0, "t": 1, "kind": "spi", "cs": cs, "xfers": xfers}
    try:
        validate_event(spi_event, 0)
    except ValueError as err:
        assert str(err).startswith("event seq 0 (spi): ") and "\n" not in str(err)
        return
    # What the reader returns, `trace show` and replay reports can describe.
    assert Decoder(header()).describe(spi_event).startswith(f"spi cs{cs} ")


def test_trace_show_prints_spi_messages_readably(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.rtrace"
    with TraceWriter(path, header()) as writer:
        writer.event("spi", cs=2, xfers=WRITE_THEN_READ)
        writer.event(
            "spi",
            cs=2,
            xfers=[
                xfer(mode=3, bits_per_word=16, freq=400_000, tx=b"\x12\x34", rx=b"\xab\xcd"),
                xfer(cs_change=1, cs_setup_ns=50, tx=b"\x00\x01", rx=b"", result=2),
            ],
        )
        writer.event("spi", cs=2, xfers=[xfer(mode=4, tx=b"\x01\x02", rx=None)])
    commands.show(str(path))
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"# {path}: ti,tmp121 at spi cs 2, ")
    lines = [line.split(" ms  ", 1)[1] for line in out if not line.startswith("#")]
    assert lines == [
        "spi cs2 mode 0, 8 bits, 10 MHz: w 0b | r 2: 0c 87",
        # A 16-bit word is its two bytes in wire order; the second transfer has its own
        # mode, word size and clock, a setup delay, cs_change, and failed.
        "spi cs2 mode 3, 16 bits, 400 kHz: x 1234 -> abcd | [mode 0, 8 bits, 10 MHz] "
        "x 00 01 -> ERR cs setup 50 ns cs_change",
        "spi cs2 mode 0 CS_HIGH, 8 bits, 10 MHz: w 01 02",
    ]
