"""The trace reader on damaged and random input: it fails only with TraceError.

Whatever the bytes, reading them (strict or not, to the end) either returns
a header and events that fit the schema, or raises TraceError; and the
decoder can describe whatever it returned. A cut-off trace read with
strict=False returns a prefix of the original events.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lz4.frame
import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roadtest.trace.decode import Decoder
from roadtest.trace.format import Header, TraceError, TraceWriter, read_trace, validate_event

FUZZ = settings(
    max_examples=100,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _real_trace() -> tuple[bytes, list[dict[str, Any]]]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "real.rtrace"
        header = Header(
            kernel="6.12.57",
            test="tests/drivers/regulator/test_tps6286x.py::test_enable",
            address=0x48,
            compatible="ti,tps62864",
            model="roadtest.models.tps6286x:TPS6286x",
            regbytes=1,
        )
        with TraceWriter(path, header, flush_every=2) as writer:
            writer.event("marker", what="bind")
            for value in range(6):
                reg = [{"flags": 1, "len": 1, "data": b"\x03", "status": 0}]
                writer.event(
                    "i2c", msgs=[*reg, {"flags": 2, "len": 1, "data": b"\x6b", "status": 0}]
                )
                writer.event(
                    "i2c", msgs=[{"flags": 0, "len": 2, "data": bytes([3, value]), "status": 0}]
                )
            writer.event("gpio", line=5, name="irq", op="unmask", value=0, status=0)
            writer.event("irq", line=5, name="irq", level=1)
            writer.event("i2c", msgs=[{"flags": 0, "len": 1, "data": b"\x09", "status": 1}])
            writer.event("marker", what="unbind")
        _, events = read_trace(path)
        return path.read_bytes(), list(events)


REAL, REAL_EVENTS = _real_trace()


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp) / "fuzz.rtrace"


def read_all(path: Path, data: bytes, strict: bool) -> list[dict[str, Any]] | None:
    """The events of `data` read as a trace, or None for a TraceError (anything else fails)."""
    path.write_bytes(data)
    try:
        header, events = read_trace(path, strict=strict)
        got = list(events)
    except TraceError as err:
        assert str(err).startswith(f"{path}: ") and "\n" not in str(err)
        return None
    decoder = Decoder(header)
    for seq, event in enumerate(got):
        validate_event(event, seq)
        assert isinstance(decoder.describe(event), str)
        assert isinstance(decoder.describe_expected_actual(REAL_EVENTS[0], event), str)
    return got


def both(path: Path, data: bytes) -> None:
    strict = read_all(path, data, strict=True)
    salvaged = read_all(path, data, strict=False)
    if strict is not None:
        assert salvaged == strict  # salvaging only matters for a cut-off file


def test_the_real_trace_reads() -> None:
    assert len(REAL_EVENTS) == 17 and len(REAL) > 200


def test_every_truncation_reads_a_prefix_of_the_events(scratch: Path) -> None:
    for size in range(len(REAL) + 1):
        assert read_all(scratch, REAL[:size], strict=True) == (
            REAL_EVENTS if size == len(REAL) else None
        )
        salvaged = read_all(scratch, REAL[:size], strict=False)
        if salvaged is not None:
            assert salvaged == REAL_EVENTS[: len(salvaged)]


@FUZZ
@given(flips=st.lists(st.tuples(st.integers(0, len(REAL) - 1), st.integers(0, 7)), min_size=1))
def test_bit_flips(scratch: Path, flips: list[tuple[int, int]]) -> None:
    data = bytearray(REAL)
    for offset, bit in flips:
        data[offset] ^= 1 << bit
    both(scratch, bytes(data))


@FUZZ
@given(
    edits=st.lists(
        st.tuples(st.integers(0, len(REAL)), st.integers(0, 8), st.binary(max_size=16)),
        min_size=1,
        max_size=4,
    )
)
def test_insertions_and_deletions(scratch: Path, edits: list[tuple[int, int, bytes]]) -> None:
    data = REAL
    for offset, delete, insert in edits:
        data = data[:offset] + insert + data[offset + delete :]
    both(scratch, data)


@FUZZ
@given(data=st.binary(max_size=300))
def test_random_bytes(scratch: Path, data: bytes) -> None:
    both(scratch, data)
    both(scratch, REAL[:11] + data)  # past the lz4 frame header


msgpack_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats()
    | st.text(max_size=8)
    | st.binary(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=6) | st.integers(0, 3), inner, max_size=4)
    ),
    max_leaves=6,
)
KEYS = ["seq", "t", "kind", "msgs", "flags", "len", "data", "status", "line", "name", "op"]
event_like = st.dictionaries(st.sampled_from(KEYS), msgpack_values, max_size=6) | msgpack_values


@settings(FUZZ, max_examples=50)
@given(objects=st.lists(event_like, max_size=5), junk=st.binary(max_size=12))
def test_random_msgpack_after_a_real_header(
    scratch: Path, objects: list[object], junk: bytes
) -> None:
    header = msgpack.packb(Header(kernel="k", test="t", address=1, compatible="c").to_map())
    stream = header + b"".join(msgpack.packb(o, use_bin_type=True) for o in objects)
    both(scratch, lz4.frame.compress(stream))
    both(scratch, lz4.frame.compress(stream + junk))
    both(scratch, lz4.frame.compress(junk + stream))


@FUZZ
@given(events=st.lists(st.sampled_from(REAL_EVENTS), max_size=6), seq_shift=st.integers(0, 2))
def test_reordered_real_events(scratch: Path, events: list[dict[str, Any]], seq_shift: int) -> None:
    header = msgpack.packb(Header(kernel="k", test="t", address=1, compatible="c").to_map())
    renumbered = [{**e, "seq": i + seq_shift} for i, e in enumerate(events)]
    stream = header + b"".join(msgpack.packb(e, use_bin_type=True) for e in renumbered)
    got = read_all(scratch, lz4.frame.compress(stream), strict=True)
    assert (got is not None) == (seq_shift == 0 or not events)
